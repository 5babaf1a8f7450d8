/** Page size bounds of the list endpoints (API.md: limit 1..500, default 50). */
export const LIMIT_DEFAULT = 50;
export const LIMIT_MAX = 500;
