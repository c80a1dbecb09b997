import type { Connection } from "../connection.js";
import type { Output } from "../output.js";

/** What every command works with, made from the global options when it runs. */
export type Context = () => { out: Output; connection: Connection };
