/**
 * `node --import` this to run a program that must not load the OpenTelemetry SDK: any import of
 * it (or of the service's tracing/otlp.js) then fails, naming what was refused. The API alone,
 * which prom-client requires, is let through.
 */
import { register } from 'node:module';

register(new URL('./refuse-tracing-sdk-hooks.js', import.meta.url));
