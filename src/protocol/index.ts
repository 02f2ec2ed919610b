/**
 * The Postgres wire protocol codec: framing, decoders and builders. Pure: no I/O, no sockets.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html
 */
export * from './codes.js';
export { FrameReader, type FrameHandler, type FrameReaderOptions } from './frame-reader.js';
export type * from './frontend-messages.js';
export type * from './backend-messages.js';
export * from './decode-frontend.js';
export { decodeStartup } from './decode-startup.js';
export * from './decode-backend.js';
export * from './build-backend.js';
export * from './build-startup.js';
export * from './build-frontend.js';
export { isWithoutAnswer, protocolViolation, withoutAnswer } from './protocol-error.js';
export { LOCALIZED_SEVERITY_KEY, RAW_SEVERITY_KEY } from './error-fields.js';
export { canonicalEncoding, clientText, UTF8_TEXT, type ClientText } from '../shared/client-encoding.js';
export { fromClientText, inClientText, transcodeFrame } from './transcode.js';
