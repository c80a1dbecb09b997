/**
 * Agenda creates a `debug` logger for nearly every step of every job, and
 * each creation asks whether stderr is a terminal (an isatty system call)
 * to choose colours: a few percent of a busy delivery process. Asking once,
 * before anything loads `debug`, gives the same answer for free; an explicit
 * DEBUG_COLORS still wins. main.ts imports this first.
 */
process.env.DEBUG_COLORS ??= process.stderr.isTTY ? "yes" : "no";
