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

/** How a runner claims from the queue (see claim-pacer.ts). */
export interface ClaimSource {
  /** The lanes whose work a claim made now would leave out (full, or down). */
  leftOut(): ReadonlySet<string>;
  /** Claims at most `limit` rows, leaving out the work of lanes `leftOut`. */
  claim(limit: number, leftOut: ReadonlySet<string>): Promise<MatchesTable[]>;
  /**
   * How many rows a claim leaving out `leftOut` may take at most: the room its lanes have. A
   * row claimed with no room in its lane would be given back at once, a write for nothing, and
   * claimed again (under a slow target, most of what a claim took). None: as many as asked.
   */
  room?(leftOut: ReadonlySet<string>): number;
}

/**
 * Takes at most `limit` rows in all; handed rows that `stays` picks are left in the handoff.
 * Without `claims`, only handed rows (no claim may be made now).
 */
export async function nextBatch(
  sources: WorkSources,
  now: number,
  limit: number,
  claims: ClaimSource | undefined,
  stays?: (item: HandedMatch) => boolean,
): Promise<Batch> {
  const { inbox, pacer } = sources;
  const handed = inbox?.take(limit, now, stays) ?? [];
  if (limit - handed.length <= 0 || claims === undefined) return { handed, claimed: [] };
  const leftOut = claims.leftOut();
  // The rows handed over take lane room too, wherever they go.
  const lanesRoom = claims.room === undefined ? Infinity : claims.room(leftOut) - handed.length;
  const room = Math.min(limit - handed.length, lanesRoom);
  if (room <= 0) return { handed, claimed: [] };
  const mayClaim = handed.length > 0 ? (pacer?.mayClaimBesides(leftOut) ?? false) : mayClaimUnhanded(sources, leftOut);
  if (!mayClaim) return { handed, claimed: [] };
  let claimed: MatchesTable[];
  try {
    claimed = await claims.claim(room, leftOut);
  } catch (error) {
    return { handed, claimed: [], claimFailed: error };
  }
  pacer?.claimed(claimed.length, room, leftOut);
  if (handed.length === 0 && claimed.length < room) inbox?.overflowDrained();
  return { handed, claimed };
}

/** With no handed work: while the handoff overflows, at once (paced only by what the last claim left out); otherwise paced. */
function mayClaimUnhanded({ inbox, pacer }: WorkSources, leftOut: ReadonlySet<string>): boolean {
  if (pacer === undefined) return true;
  return inbox?.overflowing === true ? pacer.mayClaimOverflowing(leftOut) : pacer.mayClaim(leftOut);
}
