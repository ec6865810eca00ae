#!/usr/bin/env node
/**
 * Exits 0 when the server on this host answers `GET /readyz` with 200, else 1: the container
 * image's HEALTHCHECK, which has no curl. The address and port come from the same settings as
 * the server's (flags, NOTIFICATIONS_* variables, --config file), so a port set for the server
 * is the port probed.
 */
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { loadConfig } from './config/load.js';

const TIMEOUT_MS = 5_000;

/** The address to connect to for a server listening on `address`: the loopback one for "any". */
function connectAddress(address: string): string {
  if (address === '0.0.0.0') return '127.0.0.1';
  if (address === '::' || address === '[::]') return '::1';
  return address;
}

function probe(): Promise<string> {
  const config = loadConfig({ argv: process.argv.slice(2), env: process.env, readFile: (path) => readFileSync(path, 'utf8') });
  return new Promise((resolve, reject) => {
    const host = connectAddress(config.address);
    const req = request({ host, port: config.port, path: '/readyz', timeout: TIMEOUT_MS }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`${response.statusCode} ${body}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host}:${config.port} within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

probe().then(
  (body) => {
    console.log(body);
    process.exit(0);
  },
  (error: unknown) => {
    console.error(`not ready: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
