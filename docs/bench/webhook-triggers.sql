INSERT INTO tenants (id, name) VALUES ('b1', 'b1'), ('b2', 'b2');
INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ('b1', 'api', 'c1', 0);
INSERT INTO tenant_data_keys (tenant_id, key_id, wrapped_key, master_key_id) VALUES ('b1', 1, '\x00', 'm'), ('b2', 1, '\x00', 'm');
CREATE FUNCTION ins(n int, base int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c bigint; BEGIN
  SELECT id INTO c FROM chats WHERE chat_key = 'c1';
  FOR i IN 1..n LOOP
    INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text)
    VALUES ('b1', c, 0, base + i, 'k' || (base + i), 's', 'hello there, a message of ordinary length');
  END LOOP;
END $$;
\timing on
SELECT ins(2000, 0);
ALTER TABLE inbox DISABLE TRIGGER inbox_webhooks;
SELECT 'A: no trigger';
SELECT ins(20000, 100000);
ALTER TABLE inbox ENABLE TRIGGER inbox_webhooks;
SELECT 'B: trigger, no endpoint';
SELECT ins(20000, 300000);
ALTER TABLE inbox DISABLE TRIGGER inbox_webhooks;
SELECT 'A: no trigger';
SELECT ins(20000, 200000);
ALTER TABLE inbox ENABLE TRIGGER inbox_webhooks;
SELECT 'B: trigger, no endpoint';
SELECT ins(20000, 400000);
ALTER TABLE inbox DISABLE TRIGGER inbox_webhooks;
SELECT 'A: no trigger';
SELECT ins(20000, 1000000);
ALTER TABLE inbox ENABLE TRIGGER inbox_webhooks;
SELECT 'B: trigger, no endpoint';
SELECT ins(20000, 1100000);
INSERT INTO webhook_endpoints (tenant_id, bot_id, url, events, secret_enc, secret_key_id, secret_hint)
VALUES ('b2', 'main', 'https://x/', ARRAY['message.received'], '\x00', 1, 'h');
SELECT 'C: trigger, another tenant has an endpoint';
SELECT ins(20000, 500000);
SELECT ins(20000, 600000);
INSERT INTO webhook_endpoints (tenant_id, bot_id, url, events, secret_enc, secret_key_id, secret_hint)
VALUES ('b1', 'main', 'https://x/', ARRAY['message.received'], '\x00', 1, 'h');
SELECT 'D: trigger, this tenant subscribed (a delivery row per message)';
SELECT ins(20000, 700000);
SELECT ins(20000, 800000);
SELECT count(*) FROM webhook_deliveries;
