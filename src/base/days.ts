// A UTC day in milliseconds: reports count by UTC days, and the lake partitions by them (no leap seconds in either).
export const DAY_MS = 86_400_000;
