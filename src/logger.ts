import { type Logger, pino } from "pino";

/** The service's one logger; secrets never reach the output. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "webhooks" },
    redact: {
      paths: ["authorization", "*.authorization", "apiKey", "*.apiKey", "privateKeyPem", "*.privateKeyPem", "adminToken"],
      censor: "[redacted]",
    },
  });
}
