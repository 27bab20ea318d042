import { maxHeaderSize, type Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before any route sees them (a request line or headers past Node's
 * header limit, bytes that are not HTTP) answer in the API's error shape, not with Node's bare status.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const max = (server as { maxHeaderSize?: number }).maxHeaderSize ?? maxHeaderSize;
    const body = JSON.stringify(
      tooLarge
        ? {
            code: 'HEADERS_TOO_LARGE',
            message: `the request line and headers together exceed ${max} bytes`,
            details: { max_header_bytes: max },
          }
        : { code: 'MALFORMED_REQUEST', message: 'the request is not valid HTTP/1.1', details: {} },
    );
    socket.end(
      `HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  });
}
