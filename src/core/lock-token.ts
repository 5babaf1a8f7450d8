/**
 * A lock token is `<16 random characters>.<n>.<executionSeq>`
 * (lua/claimJobs-8.lua: one random base per claim call, `n` the job's index
 * in that call, then the execution it was handed out for). Clients treat it
 * as opaque; the server reads the execution back only to recognise a
 * repeated complete after the job has left Redis (src/workers/external).
 * @returns the token's executionSeq, or null for a token of any other form.
 */
export function executionSeqOfToken(token: string): number | null {
  const m = /^[A-Za-z0-9_-]{16}\.\d{1,4}\.(\d{1,9})$/.exec(token);
  return m ? Number(m[1]) : null;
}
