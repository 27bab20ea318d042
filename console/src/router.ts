import { useEffect, useState } from 'preact/hooks';

/** Hash routes (#/agents/…): the server serves one index.html, so deep links need no fallback. */
export function useRoute(): string[] {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

export const go = (hash: string) => {
  location.hash = hash;
};
