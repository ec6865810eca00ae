import type { Migration } from 'kysely';
import * as initial from './0001-initial.js';
import * as subscriptionRateLimit from './0003-subscription-rate-limit.js';

/** Every migration, in order. Names are permanent: they are recorded in the database. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001-initial': initial,
  '0003-subscription-rate-limit': subscriptionRateLimit,
};
