/**
 * What a runner takes in next: the rows handed to it in memory, and rows claimed from the queue
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
}

export interface Batch {
  handed: HandedMatch[];
  claimed: MatchesTable[];
}

/**
 * Takes at most `limit` rows in all. `claimNow`: claim whatever the pacing says (a claim that
 * found nothing may have left out work that can be taken now).
 */
export async function nextBatch(sources: WorkSources, now: number, limit: number, claim: (limit: number) => Promise<MatchesTable[]>, claimNow = false): Promise<Batch> {
  const { inbox, pacer } = sources;
  const handed = inbox?.take(limit, now) ?? [];
  const room = limit - handed.length;
  const paced = handed.length > 0 ? (pacer?.mayClaimBesides() ?? false) : inbox?.overflowing === true || (pacer?.mayClaim() ?? true);
  const mayClaim = room > 0 && (claimNow || paced);
  if (!mayClaim) return { handed, claimed: [] };
  const claimed = await claim(room);
  pacer?.claimed(claimed.length);
  if (handed.length === 0 && claimed.length < room) inbox?.overflowDrained();
  return { handed, claimed };
}
