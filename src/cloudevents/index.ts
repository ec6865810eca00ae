/**
 * HTTP message -> validated CloudEvents (structured, binary, batched; 1.0, 0.3 and the legacy
 * 0.1 shape), and the document to deliver. Pure: no I/O, no clock, no configuration.
 */
export { parseReceived } from './parse-message.js';
export type { ParsedMessage, ReceivedEvent, ReceivedMessage, SpecVersion } from './types.js';
export { type ExtensionValues, withExtensions } from './with-extensions.js';
