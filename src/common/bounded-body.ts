/** What a capped read got: the text, or word that the body went past the cap (the rest is never read). */
export type CappedBody = { text: string; exceeded: false } | { exceeded: true };

/**
 * Reads a fetch response body as UTF-8, at most `maxBytes`: past the cap the stream is cancelled (the
 * connection is dropped), so a huge answer costs at most `maxBytes` of memory, never the whole body.
 */
export async function readBodyCapped(res: Response, maxBytes: number): Promise<CappedBody> {
  const length = Number(res.headers.get('content-length'));
  if (Number.isFinite(length) && length > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return { exceeded: true };
  }
  if (!res.body) return { text: '', exceeded: false };
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { exceeded: true };
      }
      text += decoder.decode(value, { stream: true });
    }
    return { text: text + decoder.decode(), exceeded: false };
  } finally {
    reader.releaseLock();
  }
}
