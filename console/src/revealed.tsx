import { useState } from 'preact/hooks';
import { NAME_MAX, preview, reveal, revealedText, type Piece } from './reveal';

/**
 * Every text a tenant, a model or a tool wrote (names, scopes, reasons, messages, results) is shown through
 * these: its hidden characters as escapes (reveal.ts), inside a `<bdi>` so a right-to-left run cannot carry
 * the sentence around it along, and cut where room is short. Text nodes only, never markup from the data.
 */

/** Pieces of revealed text: hidden characters as escapes in their own style. */
function Pieces({ pieces }: { pieces: Piece[] }) {
  return (
    <>
      {pieces.map((p, i) =>
        'text' in p ? (
          p.text
        ) : (
          <span class="esc" key={i} title="invisible, direction or unusual space character">
            {p.escape}
            {p.count > 1 ? `×${p.count}` : ''}
          </span>
        ),
      )}
    </>
  );
}

/** A whole text, revealed (`lines`: a message or JSON, its line breaks kept). */
export const Revealed = ({ text, lines = false }: { text: string; lines?: boolean }) => (
  <bdi>
    <Pieces pieces={reveal(text, lines)} />
  </bdi>
);

/**
 * A name where room is short (a dialog's title, a card, a cell): about `max` characters as shown, "…"
 * when cut, the whole of it as the tooltip. A padded or very long name cannot push what follows it (the
 * tool, the decision) out of the line.
 */
export function Clipped({ text, max = NAME_MAX }: { text: string; max?: number }) {
  const { pieces, more } = preview(text, max);
  return (
    <bdi title={more > 0 ? revealedText(text) : undefined}>
      <Pieces pieces={pieces} />
      {more > 0 && '…'}
    </bdi>
  );
}

/** The start of a text, revealed, and a button for the rest ("+N chars"). */
export function Preview({
  text,
  max,
  label,
  lines = false,
}: {
  text: string;
  max: number;
  label: string;
  lines?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const { pieces, more } = preview(text, max, lines);
  return (
    <>
      <bdi>
        <Pieces pieces={open ? reveal(text, lines) : pieces} />
      </bdi>
      {more > 0 && (
        <button
          type="button"
          class="more"
          aria-expanded={open}
          aria-label={open ? `Show less of ${label}` : `Show ${more} more characters of ${label}`}
          onClick={() => setOpen(!open)}
        >
          {open ? 'less' : `+${more} chars`}
        </button>
      )}
    </>
  );
}
