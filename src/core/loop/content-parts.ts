import type { ValidationProblem } from '../rules/validate-tool-rules';

/**
 * Message content with image parts (Letta's `ImageContent`, base64 only): validated on the way in,
 * stored and returned as sent, given to vision models as OpenAI `image_url` parts (a data URL), and
 * to other models as a text note. The server never fetches an image: URL images are refused.
 */

export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

export interface ImagePart {
  type: 'image';
  source: { type: 'base64'; media_type: ImageMediaType; data: string; detail?: string };
}
export type ContentPart = { type: 'text'; text: string } | ImagePart;

/** Stored content: a plain text, or parts when the message has images. */
export type MessageContent = string | ContentPart[];

/** OpenAI chat content parts. */
export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } };

export interface ImageLimits {
  /** Image parts in one message. */
  maxImages: number;
  /** Decoded bytes of one image. */
  maxImageBytes: number;
}

/** What an image costs in the context window (OpenAI bills 85–1105 tokens a tile set; a flat guess). */
export const IMAGE_TOKENS = 800;

export const MEDIA_TYPES: Record<ImageMediaType, (b: Buffer) => boolean> = {
  'image/png': (b) =>
    b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/gif': (b) => b.subarray(0, 4).toString('latin1') === 'GIF8',
  'image/webp': (b) =>
    b.subarray(0, 4).toString('latin1') === 'RIFF' &&
    b.subarray(8, 12).toString('latin1') === 'WEBP',
};
const DETAILS = ['low', 'high', 'auto'];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A message's `content`: a string, or text and image parts. Text-only parts are joined into one text
 * (as before images were accepted); with images the parts are kept. Null when invalid (problems added).
 */
export function parseContent(
  content: unknown,
  path: string,
  limits: ImageLimits,
  problems: ValidationProblem[],
): MessageContent | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    problems.push({ path, message: 'must be a string or an array of text and image parts' });
    return null;
  }
  const parts: ContentPart[] = [];
  const before = problems.length;
  content.forEach((p, i) => {
    const at = `${path}[${i}]`;
    if (isObj(p) && p.type === 'text' && typeof p.text === 'string')
      parts.push({ type: 'text', text: p.text });
    else if (isObj(p) && p.type === 'image') {
      const image = parseImage(p.source, `${at}.source`, limits, problems);
      if (image) parts.push(image);
    } else
      problems.push({
        path: at,
        message: 'must be {type: "text", text} or {type: "image", source}',
      });
  });
  const images = parts.filter((p) => p.type === 'image').length;
  if (images > limits.maxImages)
    problems.push({
      path,
      message: `has ${images} images; at most ${limits.maxImages} (processing.max_images_per_message)`,
      limit: 'processing.max_images_per_message',
    });
  if (problems.length > before) return null;
  return images === 0 ? parts.map((p) => (p as { text: string }).text).join('') : parts;
}

function parseImage(
  source: unknown,
  path: string,
  limits: ImageLimits,
  problems: ValidationProblem[],
): ImagePart | null {
  const bad = (message: string, at = path) => {
    problems.push({ path: at, message });
    return null;
  };
  if (!isObj(source)) return bad('must be {type: "base64", media_type, data}');
  if (source.type === 'url' || source.type === 'letta')
    return bad(
      `images are accepted as base64 only ({type: "base64", media_type, data}): the server does not fetch ${source.type === 'url' ? 'URLs' : 'stored files'}`,
      `${path}.type`,
    );
  if (source.type !== undefined && source.type !== 'base64')
    return bad('must be "base64"', `${path}.type`);
  const mediaType = source.media_type;
  if (typeof mediaType !== 'string' || !(mediaType in MEDIA_TYPES))
    return bad(`must be one of ${Object.keys(MEDIA_TYPES).join(', ')}`, `${path}.media_type`);
  const data = source.data;
  // base64 is 4/3 of the bytes: a text this long cannot decode to fewer than the limit allows
  if (
    typeof data !== 'string' ||
    data.length === 0 ||
    data.length > Math.ceil(limits.maxImageBytes / 3) * 4 + 4
  )
    return bad(
      `must be base64 of at most ${limits.maxImageBytes} bytes (processing.max_image_bytes)`,
      `${path}.data`,
    );
  if (data.length % 4 !== 0 || !BASE64.test(data))
    return bad('is not valid base64', `${path}.data`);
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length > limits.maxImageBytes)
    return bad(
      `must be at most ${limits.maxImageBytes} bytes (processing.max_image_bytes)`,
      `${path}.data`,
    );
  if (!MEDIA_TYPES[mediaType as ImageMediaType](bytes))
    return bad(`is not a ${mediaType} image`, `${path}.data`);
  const detail = source.detail;
  if (
    detail !== undefined &&
    detail !== null &&
    (typeof detail !== 'string' || !DETAILS.includes(detail))
  )
    return bad(`must be one of ${DETAILS.join(', ')}`, `${path}.detail`);
  return {
    type: 'image',
    source: {
      type: 'base64',
      media_type: mediaType as ImageMediaType,
      data,
      ...(typeof detail === 'string' ? { detail } : {}),
    },
  };
}

export const hasImages = (content: unknown): boolean =>
  Array.isArray(content) && content.some((p) => isObj(p) && p.type === 'image');

/** The content as text (an image as `[image]`), for search, summaries and token counts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content);
  return content
    .map((p) =>
      isObj(p) && p.type === 'text'
        ? String(p.text)
        : isObj(p) && p.type === 'image'
          ? '[image]'
          : '',
    )
    .join('');
}

/** A chat message's content as text (an image as `[image]`), for token counts and transcripts. */
export function chatText(content: string | ChatContentPart[] | null): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : '[image]')).join('');
}

/** Images among a chat message's content parts. */
export const chatImages = (content: string | ChatContentPart[] | null): number =>
  Array.isArray(content) ? content.filter((p) => p.type === 'image_url').length : 0;

/** Stored content as a chat message's: text, or OpenAI parts (images as data URLs) when it has images. */
export function toChatContent(content: unknown): string | ChatContentPart[] {
  if (!hasImages(content)) return contentText(content);
  return (content as ContentPart[]).map((p) =>
    p.type === 'text'
      ? { type: 'text', text: p.text }
      : {
          type: 'image_url',
          image_url: {
            url: `data:${p.source.media_type};base64,${p.source.data}`,
            ...(p.source.detail ? { detail: p.source.detail } : {}),
          },
        },
  );
}

const IMAGE_NOTE = "[image omitted: this agent's model does not accept images]";

/** A model that does not accept images gets each image as a text note (an agent may change models). */
export function withoutImages<M extends { role: string; content: unknown }>(messages: M[]): M[] {
  return messages.map((m) =>
    m.role === 'user' && Array.isArray(m.content)
      ? {
          ...m,
          content: (m.content as ChatContentPart[])
            .map((p) => (p.type === 'text' ? p.text : IMAGE_NOTE))
            .join(''),
        }
      : m,
  );
}
