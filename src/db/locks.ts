// Advisory lock keys shared by more than one part of the service.

/** Held by the report aggregator while it folds a window, and by the eraser while it clears the report tables. */
export const REPORTS_FOLD_LOCK = 7_240_311_909;

/**
 * Held by the instance writing the lake (a session lock, for a whole export) and by an erasure while it rewrites the
 * lake's files: one writer at a time, and an erasure never races an export that read its users before they were
 * deleted.
 */
export const LAKE_WRITER_LOCK = 7_240_311_910;
/**
 * Taken exclusively for the moment an export's files are put in place and its watermark moves (and while a day's files
 * are joined into one), shared by a funnel while it lists the files and reads the rows past the watermark: it never
 * counts a row twice or misses one.
 */
export const LAKE_PUBLISH_LOCK = 7_240_311_911;
