import type { FastifyPluginCallback } from "fastify";
import { DEFAULT_MAX_BODY_BYTES, type ReceiverOrOptions, receiverOf } from "./raw-body.js";

export type FastifyReceiverOptions = ReceiverOrOptions & {
  /** The route's path inside the plugin's prefix. Default "/". */
  path?: string;
};

/**
 * A Fastify plugin with one POST route:
 * `app.register(fastifyReceiver, { prefix: "/webhooks", keys, onNotification })`.
 *
 * Inside the plugin's own encapsulated context it replaces the content-type
 * parsers with one that keeps every body as its raw Buffer, so the route
 * verifies the bytes the service sent while the rest of the application
 * keeps parsing JSON as before. Fastify answers a body over `maxBodyBytes`
 * with 413 itself.
 */
export const fastifyReceiver: FastifyPluginCallback<FastifyReceiverOptions> = (fastify, options, done) => {
  const receiver = receiverOf(options);
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser(
    "*",
    { parseAs: "buffer", bodyLimit: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES },
    (_request, body, parsed) => parsed(null, body),
  );
  fastify.post(options.path ?? "/", async (request, reply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const answer = await receiver.handle({ body, headers: request.headers });
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  });
  done();
};
