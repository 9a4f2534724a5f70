// Advisory lock keys shared by more than one part of the service.

/** Held by the report aggregator while it folds a window, and by the eraser while it clears the report tables. */
export const REPORTS_FOLD_LOCK = 7_240_311_909;
