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
  /** The claim failed (the database is not answering): the rows handed over are still to be worked on; the caller reports it after. */
  claimFailed?: unknown;
}

/** What a claim took, and the lanes whose work it left out (see claim-pacer.ts). */
export interface Claimed {
  rows: MatchesTable[];
  leftOut: ReadonlySet<string>;
}

/** Takes at most `limit` rows in all. */
export async function nextBatch(
  sources: WorkSources,
  now: number,
  limit: number,
  claim: (limit: number) => Promise<Claimed>,
): Promise<Batch> {
  const { inbox, pacer } = sources;
  const handed = inbox?.take(limit, now) ?? [];
  const room = limit - handed.length;
  const mayClaim =
    room > 0 && (handed.length > 0 ? (pacer?.mayClaimBesides() ?? false) : inbox?.overflowing === true || (pacer?.mayClaim() ?? true));
  if (!mayClaim) return { handed, claimed: [] };
  let result: Claimed;
  try {
    result = await claim(room);
  } catch (error) {
    return { handed, claimed: [], claimFailed: error };
  }
  const { rows: claimed, leftOut } = result;
  // A claim that found all it asked for left nothing out that it would have taken.
  pacer?.claimed(claimed.length, claimed.length < room ? leftOut : new Set());
  if (handed.length === 0 && claimed.length < room) inbox?.overflowDrained();
  return { handed, claimed };
}
