/**
 * What a stage works on next: the rows handed to it in memory, and rows claimed from the queue
 * when the handoff is empty (paced, see claim-pacer.ts), when it overflowed into the queue
 * (at once, until the queue is claimed dry), and once in a while besides handed work, so that
 * retries coming due and other instances' rows are never starved by a stream of new events.
 */
import type { MatchesTable } from '../db/tables.js';
import type { ClaimPacer } from './claim-pacer.js';
import type { HandedMatch, Handoff } from './handoff.js';

export interface WorkSources {
  inbox?: Handoff;
  pacer?: ClaimPacer;
  batchSize: number;
}

export interface Batch {
  handed: HandedMatch[];
  claimed: MatchesTable[];
}

export async function nextBatch(sources: WorkSources, now: number, claim: (limit: number) => Promise<MatchesTable[]>): Promise<Batch> {
  const { inbox, pacer, batchSize } = sources;
  const handed = inbox?.take(batchSize, now) ?? [];
  const mayClaim = handed.length > 0 ? (pacer?.mayClaimBesides() ?? false) : inbox?.overflowing === true || (pacer?.mayClaim() ?? true);
  if (!mayClaim) return { handed, claimed: [] };
  const claimed = await claim(batchSize);
  pacer?.claimed(claimed.length);
  if (handed.length === 0 && claimed.length < batchSize) inbox?.overflowDrained();
  return { handed, claimed };
}
