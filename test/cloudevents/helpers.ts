import assert from 'node:assert/strict';
import { type ParsedMessage, parseReceived } from '../../src/cloudevents/index.js';
import { ServiceError } from '../../src/errors.js';

export const STRUCTURED = 'application/cloudevents+json; charset=utf-8';
export const BATCHED = 'application/cloudevents-batch+json';

export const v1 = { specversion: '1.0', id: 'A234-1234-1234', source: '/mycontext', type: 'com.example.someevent' };
export const v03 = { specversion: '0.3', id: 'B234-1234-1234', source: '/mycontext', type: 'com.example.someevent' };
export const v01 = { cloudEventsVersion: '0.1', eventID: 'C234-1234-1234', source: '/mycontext', eventType: 'com.example.someevent' };

export function structured(document: unknown, contentType = STRUCTURED): ParsedMessage {
  return parseReceived({ contentType, headers: {}, body: Buffer.from(JSON.stringify(document)) });
}

export function raw(
  contentType: string | undefined,
  body: string | Buffer,
  headers: Record<string, string | string[] | undefined> = {},
): ParsedMessage {
  return parseReceived({ contentType, headers, body: typeof body === 'string' ? Buffer.from(body) : body });
}

/** Runs `run` and checks it fails with `status` and a message matching `message`. */
export function fails(run: () => unknown, status: number, message: string | RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ServiceError, String(error));
    assert.equal(error.statusCode, status);
    if (typeof message === 'string') assert.equal(error.message, message);
    else assert.match(error.message, message);
    return true;
  });
}
