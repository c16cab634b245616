-- Signed outbound webhooks (issue 15): a bot's endpoints, and a delivery row per event and endpoint, signed per the
-- Standard Webhooks spec and retried until delivered or out of tries.

CREATE TABLE webhook_endpoints (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bot_id           text NOT NULL,
    url              text NOT NULL,
    events           text[] NOT NULL CHECK (cardinality(events) > 0
                         AND events <@ ARRAY['message.received', 'reply.sent', 'task.fired', 'dead_letter.created']),
    description      text,
    -- The signing secret (whsec_...), sealed with the tenant's data key (purpose webhook_endpoints.secret).
    secret_enc       bytea NOT NULL,
    secret_key_id    integer NOT NULL,
    secret_hint      text NOT NULL,
    enabled          boolean NOT NULL DEFAULT true,
    disabled_reason  text,
    -- Since when no delivery to it has succeeded (null: the last one did, or none failed yet).
    failing_since    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id),
    FOREIGN KEY (tenant_id, secret_key_id) REFERENCES tenant_data_keys (tenant_id, key_id)
);
CREATE INDEX webhook_endpoints_bot ON webhook_endpoints (tenant_id, bot_id);

-- One row per event and endpoint. id is the webhook-id header: the same on every try, so a receiver drops a repeat.
-- payload is exactly the body signed and sent.
CREATE TABLE webhook_deliveries (
    id               text PRIMARY KEY,
    tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bot_id           text NOT NULL,
    endpoint_id      bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_type       text NOT NULL,
    payload          text NOT NULL,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    claimed_by       text,
    claimed_until    timestamptz NOT NULL DEFAULT '-infinity',
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, bot_id, created_at);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';

-- The events are written by the statements that make them, in their transaction: an event exists exactly when what it
-- tells of committed. Statement-level triggers: one query per statement (a batch of messages is one), and none beyond
-- a probe of the endpoints of the statement's tenants while none of them has an enabled endpoint.
CREATE FUNCTION webhook_timestamp(at timestamptz) RETURNS text LANGUAGE sql STABLE AS
$$ SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

-- message.received (a person's message in the inbox) and task.fired (a scheduled task's message).
CREATE FUNCTION webhook_inbox_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled AND e.tenant_id IN (SELECT n.tenant_id FROM new_rows n)) THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, tenant_id, bot_id, endpoint_id, event_type, payload)
    SELECT 'msg_' || CASE WHEN n.kind = 'task' THEN 'task' ELSE 'in' END || n.id || '_' || e.id, n.tenant_id, c.bot_id, e.id,
           t.type,
           json_build_object('type', t.type, 'timestamp', webhook_timestamp(n.received_at), 'data', json_build_object(
               'botId', c.bot_id, 'channel', c.channel, 'chatId', c.chat_key, 'messageId', n.idempotency_key,
               'senderId', n.sender_id, 'seq', n.seq, 'text', n.text))::text
      FROM new_rows n
      JOIN chats c ON c.id = n.chat_id
      CROSS JOIN LATERAL (SELECT CASE WHEN n.kind = 'task' THEN 'task.fired' ELSE 'message.received' END AS type) t
      JOIN webhook_endpoints e ON e.tenant_id = n.tenant_id AND e.bot_id = c.bot_id AND e.enabled AND t.type = ANY (e.events)
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER inbox_webhooks AFTER INSERT ON inbox REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_inbox_events();

-- reply.sent: a reply committed, for the channels whose replies are fetched; once delivered, for the pushed ones.
CREATE FUNCTION webhook_reply_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled AND e.tenant_id IN (SELECT n.tenant_id FROM new_rows n)) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO webhook_deliveries (id, tenant_id, bot_id, endpoint_id, event_type, payload)
        SELECT 'msg_out' || md5(n.id) || '_' || e.id, n.tenant_id, c.bot_id, e.id, 'reply.sent',
               json_build_object('type', 'reply.sent', 'timestamp', webhook_timestamp(n.created_at), 'data', json_build_object(
                   'botId', c.bot_id, 'channel', c.channel, 'chatId', c.chat_key, 'replyId', n.id, 'seq', n.seq,
                   'text', n.text))::text
          FROM new_rows n
          JOIN chats c ON c.id = n.chat_id
          JOIN webhook_endpoints e ON e.tenant_id = n.tenant_id AND e.bot_id = c.bot_id AND e.enabled
                                  AND 'reply.sent' = ANY (e.events)
         WHERE NOT n.push
        ON CONFLICT (id) DO NOTHING;
    ELSE
        INSERT INTO webhook_deliveries (id, tenant_id, bot_id, endpoint_id, event_type, payload)
        SELECT 'msg_out' || md5(n.id) || '_' || e.id, n.tenant_id, c.bot_id, e.id, 'reply.sent',
               json_build_object('type', 'reply.sent', 'timestamp', webhook_timestamp(coalesce(n.delivered_at, now())),
                   'data', json_build_object('botId', c.bot_id, 'channel', c.channel, 'chatId', c.chat_key, 'replyId', n.id,
                   'seq', n.seq, 'text', n.text))::text
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id AND o.status <> 'delivered'
          JOIN chats c ON c.id = n.chat_id
          JOIN webhook_endpoints e ON e.tenant_id = n.tenant_id AND e.bot_id = c.bot_id AND e.enabled
                                  AND 'reply.sent' = ANY (e.events)
         WHERE n.push AND n.status = 'delivered'
        ON CONFLICT (id) DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER outbox_webhooks_insert AFTER INSERT ON outbox REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_reply_events();
CREATE TRIGGER outbox_webhooks_update AFTER UPDATE ON outbox REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_reply_events();

-- dead_letter.created: work that failed for good (a message no turn could answer, a reply no send could deliver).
CREATE FUNCTION webhook_dead_letter_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled AND e.tenant_id IN (SELECT n.tenant_id FROM new_rows n)) THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, tenant_id, bot_id, endpoint_id, event_type, payload)
    SELECT 'msg_dl' || n.id || '_' || e.id, n.tenant_id, coalesce(c.bot_id, 'main'), e.id, 'dead_letter.created',
           json_build_object('type', 'dead_letter.created', 'timestamp', webhook_timestamp(n.created_at), 'data',
               json_build_object('botId', coalesce(c.bot_id, 'main'), 'deadLetterId', n.id, 'kind', n.kind, 'refId', n.ref_id,
               'channel', c.channel, 'chatId', c.chat_key, 'error', n.error, 'attempts', n.attempts))::text
      FROM new_rows n
      LEFT JOIN chats c ON c.id = n.chat_id
      JOIN webhook_endpoints e ON e.tenant_id = n.tenant_id AND e.bot_id = coalesce(c.bot_id, 'main') AND e.enabled
                              AND 'dead_letter.created' = ANY (e.events)
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER dead_letters_webhooks AFTER INSERT ON dead_letters REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_dead_letter_events();
