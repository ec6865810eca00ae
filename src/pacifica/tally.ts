/** What an import made of the rows of one kind it read. */
export interface Tally {
  read: number;
  new: number;
  /** There already: the same row, or the same one changed here since (counted in `changedHere` too). */
  present: number;
  changedHere: number;
  /** A row here with the same key holds something else: left as it is. */
  conflicts: Listed;
  /** A row of the original's that cannot be read as one of this service's: not imported. */
  unreadable: Listed;
}

/** How many, and the first of them by uuid, with why. */
export interface Listed {
  count: number;
  first: Array<{ uuid: string; reason: string }>;
}

export function emptyTally(): Tally {
  return { read: 0, new: 0, present: 0, changedHere: 0, conflicts: { count: 0, first: [] }, unreadable: { count: 0, first: [] } };
}
