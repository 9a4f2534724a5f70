/** One version of the schema: applied once, in a transaction with the others pending, under the migrations' lock. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
