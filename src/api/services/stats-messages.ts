import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { DeliveryStatsReport, StatsPoint } from "../../domain/delivery-stats.js";
import {
  type DeliveryStats,
  type DeliveryStatsPoint,
  DeliveryStatsPointSchema,
  DeliveryStatsSchema,
  EndpointHealthSchema,
} from "../../gen/webhooks/v1/delivery_stats_pb.js";

function toPointMessage(point: StatsPoint): DeliveryStatsPoint {
  return create(DeliveryStatsPointSchema, {
    start: timestampFromDate(point.start),
    accepted: BigInt(point.accepted),
    delivered: BigInt(point.delivered),
    failed: BigInt(point.failed),
    attempts: BigInt(point.attempts),
    failedAttempts: BigInt(point.failedAttempts),
    ...(point.latencyMs.p50 === undefined ? {} : { latencyP50Ms: point.latencyMs.p50 }),
    ...(point.latencyMs.p95 === undefined ? {} : { latencyP95Ms: point.latencyMs.p95 }),
    ...(point.latencyMs.p99 === undefined ? {} : { latencyP99Ms: point.latencyMs.p99 }),
  });
}

export function toDeliveryStatsMessage(report: DeliveryStatsReport): DeliveryStats {
  return create(DeliveryStatsSchema, {
    range: report.range,
    stepSeconds: report.stepSeconds,
    points: report.points.map(toPointMessage),
    totals: toPointMessage(report.totals),
    pending: BigInt(report.pending),
    endpoints: report.endpoints.map((endpoint) =>
      create(EndpointHealthSchema, {
        clientId: endpoint.clientId,
        origin: endpoint.origin,
        attempts: BigInt(endpoint.attempts),
        failedAttempts: BigInt(endpoint.failedAttempts),
        ...(endpoint.successRate === undefined ? {} : { successRate: endpoint.successRate }),
        ...(endpoint.latencyP95Ms === undefined ? {} : { latencyP95Ms: endpoint.latencyP95Ms }),
        ...(endpoint.failingSince ? { failingSince: timestampFromDate(endpoint.failingSince) } : {}),
        attemptsPerStep: endpoint.attemptsPerStep.map(BigInt),
        failedAttemptsPerStep: endpoint.failedAttemptsPerStep.map(BigInt),
      }),
    ),
  });
}
