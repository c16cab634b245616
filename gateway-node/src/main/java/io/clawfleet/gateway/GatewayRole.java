package io.clawfleet.gateway;

import io.clawfleet.gateway.admission.Admission;
import io.clawfleet.gateway.admission.TenantRates;
import io.clawfleet.shared.store.RateWindowStore;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.console.ConsoleApi;
import io.clawfleet.gateway.console.ConsoleStore;
import io.clawfleet.gateway.auth.AuthFailures;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.http.BotsApi;
import io.clawfleet.gateway.http.McpServersApi;
import io.clawfleet.shared.store.BotMcpServerStore;
import io.clawfleet.gateway.http.BotRoles;
import io.clawfleet.gateway.http.DeferredApi;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.gateway.admission.TokenQuotas;
import io.clawfleet.shared.store.WebChatStore;
import io.clawfleet.shared.store.SendPacingStore;
import io.clawfleet.shared.store.DeferredStore;
import io.clawfleet.shared.store.QuotaStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotStore;
import io.clawfleet.gateway.http.AuditApi;
import io.clawfleet.gateway.http.HttpAudit;
import io.clawfleet.gateway.delivery.OutboxDelivery;
import io.clawfleet.gateway.http.ChannelsApi;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.gateway.http.ApprovalsApi;
import io.clawfleet.gateway.http.KeysApi;
import io.clawfleet.shared.store.KeyStore;
import io.clawfleet.gateway.operator.OperatorAuth;
import io.clawfleet.gateway.operator.TenantDeleter;
import io.clawfleet.gateway.operator.TenantsAdminApi;
import io.clawfleet.gateway.http.ChatsApi;
import io.clawfleet.gateway.http.ExportApi;
import io.clawfleet.gateway.export.TenantExport;
import io.clawfleet.gateway.http.ClusterApi;
import io.clawfleet.gateway.http.DeadLettersApi;
import io.clawfleet.gateway.http.MessagesApi;
import io.clawfleet.gateway.http.OpenAiApi;
import io.clawfleet.gateway.http.ProvidersApi;
import io.clawfleet.gateway.http.TasksApi;
import io.clawfleet.gateway.http.TenantApi;
import io.clawfleet.gateway.http.WorkspaceApi;
import io.clawfleet.gateway.reply.ReplyHub;
import io.clawfleet.gateway.reply.ReplyWait;
import io.clawfleet.gateway.mcp.McpEndpoint;
import io.clawfleet.shared.store.McpSessionStore;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.http.PairingsApi;
import io.clawfleet.gateway.delivery.ChannelAccounts;
import io.clawfleet.gateway.delivery.ChannelNotices;
import io.clawfleet.gateway.delivery.PlatformHttp;
import io.clawfleet.gateway.delivery.SendPacer;
import io.clawfleet.gateway.slack.SlackApi;
import io.clawfleet.gateway.slack.SlackEvents;
import io.clawfleet.gateway.slack.SlackSender;
import io.clawfleet.gateway.slack.SlackWebhook;
import io.clawfleet.gateway.telegram.TelegramApi;
import io.clawfleet.gateway.delivery.TypingKeeper;
import io.clawfleet.gateway.discord.DiscordApi;
import io.clawfleet.gateway.discord.DiscordEvents;
import io.clawfleet.gateway.discord.DiscordGateway;
import io.clawfleet.gateway.discord.DiscordInteractions;
import io.clawfleet.gateway.discord.DiscordSender;
import io.clawfleet.gateway.webchat.WebChat;
import io.clawfleet.gateway.webhooks.InboundWebhook;
import io.clawfleet.gateway.webhooks.WebhookDispatcher;
import io.clawfleet.gateway.webhooks.WebhooksApi;
import io.clawfleet.gateway.whatsapp.WhatsAppApi;
import io.clawfleet.gateway.whatsapp.WhatsAppSender;
import io.clawfleet.gateway.whatsapp.WhatsAppWebhook;
import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.gateway.telegram.TelegramPoller;
import io.clawfleet.gateway.telegram.TelegramSender;
import io.clawfleet.gateway.telegram.TelegramUpdates;
import io.clawfleet.gateway.telegram.TelegramWebhook;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.security.TenantKeys;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.store.WebhookStore;
import io.clawfleet.shared.store.ApprovalStore;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.DeadLetterStore;
import io.clawfleet.shared.store.DeliveryStore;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.LeaseStore;
import io.clawfleet.shared.store.FleetStatsStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantDeletionStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.UsageStore;
import io.clawfleet.shared.store.WorkspaceStore;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.ext.web.handler.TimeoutHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/** Wiring of the gateway role: auth, intake, reply delivery and the HTTP APIs on the node's router. */
public final class GatewayRole implements NodeRole {

    /** Tenant created for {@code CLAWFLEET_API_KEY}. */
    public static final String DEFAULT_TENANT = "default";
    private static final Logger LOG = LoggerFactory.getLogger(GatewayRole.class);
    private static final int MAX_WAITERS = 100_000;
    /** Messages committed together at most; more per statement gains little and holds chat locks longer. */
    private static final int INTAKE_BATCH = 128;
    /** Plaintext tokens sealed per statement batch at start. */
    private static final int SEAL_BATCH = 500;
    /**
     * Intake commits under way at once: one, so what arrives during it goes in the next, and the rest of the database
     * pool stays free for reads. Two split what waited into two smaller groups that took turns for the same cores:
     * 14-47 % fewer messages a second on two cores (PERFORMANCE.md, "one group commit under way, not two").
     */
    private static final int INTAKE_BATCHES_IN_FLIGHT = 1;
    /** Exports at once per gateway: each holds a database connection for its length. */
    private static final int EXPORTS_IN_FLIGHT = 2;
    /** An export whose client reads nothing for this long gives its snapshot and connection up. */
    private static final long EXPORT_STALL_MS = 120_000;

    private final AtomicBoolean accepting = new AtomicBoolean();
    private ReplyHub hub;
    private OutboxDelivery delivery;
    private TelegramPoller telegramPoller;
    private DiscordGateway discordGateway;
    private WebhookDispatcher webhookDispatcher;
    /** How long a platform's post to {@code /hooks/*} may wait for its answer before it gets a 503. */
    static final long HOOK_TIMEOUT_MS = 10_000;
    private AuthFailures authFailures;
    private TenantDeleter tenantDeleter;
    private long rateWindowsTimer = -1;
    private long sendPacingTimer = -1;
    private static final long SEND_PACING_PRUNE_MS = 600_000;
    private long mcpSessionsTimer = -1;
    private long longPollBackstopTimer = -1;
    private McpEndpoint mcp;
    private static final long MCP_SWEEP_MS = 600_000;
    private io.vertx.core.Vertx vertx;

    @Override
    public String name() {
        return "gateway";
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        vertx = ctx.vertx();
        ClawfleetConfig config = ctx.config();
        var pool = ctx.database().pool();
        TenantStore tenants = new TenantStore(pool);
        OutboxStore outbox = new OutboxStore(pool);
        Admission admission = new Admission(config.limits(), ctx.metrics());
        IntakeBatcher batcher = new IntakeBatcher(ctx.vertx(), new InboxStore(pool), INTAKE_BATCH, INTAKE_BATCHES_IN_FLIGHT);
        ctx.metrics().gauge("clawfleet.ingest.queued", batcher::queued, "node", ctx.nodeId());
        Ingest ingest = new Ingest(batcher, new Partitioner(ctx.partitions()), ctx.vertx().eventBus(),
                admission, config.limits().maxUnansweredPerChat(), ctx.metrics(), ctx.tracing(), ctx.nodeId());
        hub = new ReplyHub(ctx.vertx(), ctx.nodeId(), MAX_WAITERS, ctx.signer(), ctx.metrics());
        ctx.metrics().gauge("clawfleet.gateway.waiting", hub::waiting, "node", ctx.nodeId());
        // A member that came or went may have taken reply notices with it: long polls read before they wait again.
        ctx.membership().onChange(change -> hub.forgetHeard());
        AuditStore auditStore = new AuditStore(pool);
        authFailures = new AuthFailures(ctx.vertx(), auditStore);
        ApiKeyAuth auth = new ApiKeyAuth(tenants, authFailures);
        HttpAudit httpAudit = new HttpAudit(auditStore, ctx.metrics());
        AuditApi auditApi = new AuditApi(auditStore);
        BotStore botStore = new BotStore(pool);
        BotScope botScope = new BotScope(botStore);
        // Reply notices can reach this gateway only while it sees a worker; else waits read the outbox themselves.
        java.util.function.BooleanSupplier noticesCanArrive = () -> ctx.membership().members().stream().anyMatch(m -> m.hasRole("worker"));
        MessagesApi messages = new MessagesApi(ingest, outbox, hub, config.http().maxWaitSeconds(), () -> !noticesCanArrive.getAsBoolean());
        longPollBackstopTimer = ctx.vertx().setPeriodic(MessagesApi.BACKSTOP_MS, id -> messages.backstopTick());
        TenantKeys tenantKeys = new TenantKeys(pool, config.security().masterKeys());
        BotProviderStore providerStore = new BotProviderStore(pool, tenantKeys);
        BotRoles botRoles = new BotRoles(providerStore, modelNames(config));
        ReplyWait replyWait = new ReplyWait(ctx.vertx(), hub, outbox, config.http().replyTimeoutMs(), noticesCanArrive);
        OpenAiApi openAi = new OpenAiApi(ingest, new UsageStore(pool), hub, ctx.nodeId(), replyWait,
                botRoles, botScope, botStore);
        ClusterApi cluster = new ClusterApi(ctx.membership(), new LeaseStore(pool));
        DeadLettersApi deadLetters = new DeadLettersApi(new DeadLetterStore(pool), outbox, ingest);
        // Usage reports say which of their sources the range reaches past the retention.
        UsageStore usageReports = new UsageStore(pool, config.retention());
        // A tenant over a token quota: HTTP messages get 429, channel messages are kept aside (issue 14).
        TokenQuotas tokenQuotas = new TokenQuotas(new QuotaStore(pool), Clock.systemUTC());
        // A change to a tenant's keys, bots, settings or status: this gateway forgets what it cached before it answers
        // (so the caller's next request sees the change), the others when the notice reaches them.
        java.util.function.Consumer<String> tenantChanged = id -> {
            auth.forget(id);
            botScope.forget(id);
            botRoles.forget(id);
            tokenQuotas.forget(id);
            ctx.vertx().eventBus().publish(Addresses.TENANT_CHANGED, new TenantChanged(id));
        };
        TenantApi tenantApi = new TenantApi(botStore, usageReports, tenantChanged, config.agent().autonomy(),
                config.agent().memoryScope(), botRoles::roles);
        ChannelBotStore bots = new ChannelBotStore(pool, tenantKeys);
        EgressGuard egress = EgressGuard.system(ctx.vertx(), egressAllowed(config));
        PlatformHttp platforms = new PlatformHttp(ctx.vertx(), egress);
        TelegramApi telegram = new TelegramApi(platforms);
        SlackApi slack = new SlackApi(platforms);
        WhatsAppApi whatsapp = new WhatsAppApi(platforms);
        SendPacingStore sendPacing = new SendPacingStore(pool);
        SendPacer pacer = new SendPacer(config.delivery().claimMs(), sendPacing);
        sendPacingTimer = ctx.vertx().setPeriodic(SEND_PACING_PRUNE_MS, id -> sendPacing.prune()
                .onFailure(e -> LOG.debug("send pacing rows not pruned: {}", e.getMessage())));
        DiscordApi discord = new DiscordApi(ctx.vertx(), platforms, pacer.maxWaitNanos() / 1_000_000);
        ChannelNotices notices = (bot, chatId, text) -> switch (bot.channel()) {
            case Channels.SLACK -> slack.notice(bot, chatId, text);
            case Channels.WHATSAPP -> whatsapp.sendText(bot.apiUrl(), bot.token(), bot.accountUserId(), chatId, text);
            case Channels.WEBHOOK, Channels.WEBCHAT -> InboundWebhook.NO_NOTICES.tell(bot, chatId, text);
            case Channels.DISCORD -> discord.createMessage(bot.id(), bot.apiUrl(), bot.token(),
                    chatId.startsWith("g") ? chatId.substring(1) : chatId, text);
            default -> telegram.sendMessage(bot.apiUrl(), bot.token(), chatId, text);
        };
        ChannelAccessStore channelAccess = new ChannelAccessStore(pool);
        SenderAccess senderAccess = new SenderAccess(channelAccess);
        ChannelsApi channels = new ChannelsApi(bots, telegram, slack, whatsapp, discord, config.telegram().apiUrl(), config.http().publicUrl(),
                channelAccess, senderAccess);
        ChannelAccounts accounts = new ChannelAccounts(bots);
        delivery = new OutboxDelivery(ctx.vertx(), ctx.nodeId(), new DeliveryStore(pool),
                List.of(new TelegramSender(ctx.vertx(), telegram, accounts, pacer), new SlackSender(ctx.vertx(), slack, accounts, pacer),
                        new WhatsAppSender(ctx.vertx(), whatsapp, accounts, pacer), new DiscordSender(discord, accounts)),
                config.delivery(), ctx.metrics(), ctx.tracing());
        hub.onNotice(delivery::notice);
        WorkspaceApi workspace = new WorkspaceApi(new WorkspaceStore(pool), ctx.vertx().eventBus());
        TasksApi tasks = new TasksApi(new TaskStore(pool), new ChatStore(pool), config.scheduler());
        ChatsApi chatsApi = new ChatsApi(new ChatStore(pool), auditStore);
        ApprovalsApi approvalsApi = new ApprovalsApi(new ApprovalStore(pool), ctx.vertx().eventBus());
        DeferredStore deferredStore = new DeferredStore(pool);
        Deferral deferral = new Deferral(tokenQuotas, deferredStore, notices, config.telegram().quotaNotice(), ctx.metrics());
        TypingKeeper typing = new TypingKeeper(ctx.vertx(), hub, ctx.metrics());
        TelegramUpdates telegramUpdates = new TelegramUpdates(ingest, deferral, senderAccess, telegram, typing, ctx.metrics());
        telegramPoller = new TelegramPoller(ctx.vertx(), ctx.nodeId(), bots, telegram, telegramUpdates);
        TelegramWebhook telegramWebhook = new TelegramWebhook(bots, telegramUpdates, ctx.metrics());
        SlackWebhook slackWebhook = new SlackWebhook(bots, new SlackEvents(ingest, deferral, senderAccess, slack, ctx.metrics()),
                ctx.metrics());
        webhookDispatcher = new WebhookDispatcher(ctx.vertx(), ctx.nodeId(), new WebhookStore(pool, tenantKeys), platforms,
                config.webhooks(), ctx.metrics());
        WhatsAppWebhook whatsappWebhook = new WhatsAppWebhook(bots, ingest, deferral, senderAccess, whatsapp, ctx.metrics());
        InboundWebhook inboundWebhook = new InboundWebhook(bots, ingest, deferral, senderAccess, ctx.metrics());
        DiscordInteractions discordInteractions = new DiscordInteractions(bots, ingest, deferral, senderAccess, ctx.metrics());
        discordGateway = new DiscordGateway(ctx.vertx(), ctx.nodeId(), bots, discord,
                new DiscordEvents(ingest, deferral, senderAccess, discord, typing, ctx.metrics()), egress, ctx.metrics());
        WebChat webChat = new WebChat(ctx.vertx(), ctx.nodeId(), bots, ingest, tokenQuotas, outbox, new WebChatStore(pool), hub,
                ctx.metrics());

        Router router = ctx.router();
        Handler<RoutingContext> open = this::refuseWhenStopping;
        BodyHandler body = BodyHandler.create(false).setBodyLimit(config.http().maxBodyBytes());
        // The body is read (bounded) before the key is checked: an async check must not race the body.
        // A workspace file may be 1 MiB, more once JSON-escaped: its PUT gets a body limit of its own.
        BodyHandler fileBody = BodyHandler.create(false).setBodyLimit(WorkspaceApi.maxBodyBytes(config.http().maxBodyBytes()));
        router.put(WorkspaceApi.FILES + "*").handler(fileBody);
        router.put(BOT_PREFIX + WorkspaceApi.FILES.substring(API.length()) + "*").handler(fileBody);
        // The fleet's members, roles and partition owners are the operator's to see, not a tenant's: the operator key,
        // checked before the tenant keys' handler (docs/SECURITY.md#the-edge). /admin/v1/cluster is the same view.
        OperatorAuth operatorAuth = new OperatorAuth(config.security().operatorKey());
        router.get(API + "/cluster").handler(open).handler(operatorAuth::handle).handler(cluster::get);
        router.get("/admin/v1/cluster").handler(open).handler(operatorAuth::handle).handler(cluster::get);
        // Platforms' webhooks: no API key, each checks the platform's own secret or signature (docs/CHANNELS.md).
        // A platform waits a few seconds for its answer (Slack 3), then posts again: a post this gateway has not answered
        // within 10 s (a stalled database, say) gets a 503 rather than holding the platform's connection.
        router.route("/hooks/*").handler(TimeoutHandler.create(HOOK_TIMEOUT_MS, 503));
        router.post(TelegramWebhook.PATH).handler(body).handler(open).handler(telegramWebhook::handle);
        router.post(SlackWebhook.PATH).handler(body).handler(open).handler(slackWebhook::handle);
        router.get(WhatsAppWebhook.PATH).handler(open).handler(whatsappWebhook::verify);
        router.post(WhatsAppWebhook.PATH).handler(body).handler(open).handler(whatsappWebhook::handle);
        router.post(InboundWebhook.PATH).handler(body).handler(open).handler(inboundWebhook::handle);
        router.post(DiscordInteractions.PATH).handler(body).handler(open).handler(discordInteractions::handle);
        router.get(WebChat.WIDGET_PATH).handler(open).handler(webChat::widget);
        router.options(WebChat.SESSIONS_PATH).handler(webChat::preflight);
        router.post(WebChat.SESSIONS_PATH).handler(body).handler(open).handler(webChat::session);
        router.get(WebChat.SOCKET_PATH).handler(open).handler(webChat::socket);
        router.route("/api/*").handler(body);
        router.route("/v1/*").handler(body);
        router.route("/api/*").handler(open).handler(auth::handle).handler(httpAudit::handle);
        router.route("/v1/*").handler(open).handler(auth::handle).handler(httpAudit::handle);
        // The operator console (issue 17): its page, and the API it reads with the operator's or a tenant admin's key.
        new ConsoleApi(ctx.vertx(), ctx.nodeId(), config.console(), operatorAuth, auth, authFailures, cluster,
                new FleetStatsStore(pool), new ConsoleStore(pool), tenants, botStore, new DeadLetterStore(pool), deadLetters,
                new TaskStore(pool), auditStore, tenantChanged).register(router, open);
        TenantDeletionStore deletions = new TenantDeletionStore(pool);
        tenantDeleter = new TenantDeleter(ctx.vertx(), ctx.nodeId(), deletions, config.tenantDeletion(), tenantChanged);

        // The bot's routes: each under /api/v1/bots/{botId}/... and, for the default bot main, without the prefix.
        BotRoutes botRoutes = new BotRoutes(router, botScope);
        // Message intake is not audited per message (HttpAudit): the inbox records each one.
        RateWindowStore rateWindows = new RateWindowStore(pool);
        TenantRates rates = new TenantRates(rateWindows, botRoles::roles);
        rateWindowsTimer = ctx.vertx().setPeriodic(60_000, id -> {
            rateWindows.dropOld().onFailure(e -> LOG.warn("old rate windows not dropped: {}", e.getMessage()));
            deferredStore.dropExpired(java.time.Instant.now())
                    .onSuccess(n -> {
                        if (n > 0) {
                            LOG.info("deferred messages expired unreplayed [count: {}, after: {}]", n, DeferredStore.TTL);
                        }
                    })
                    .onFailure(e -> LOG.warn("expired deferred messages not dropped: {}", e.getMessage()));
        });
        botRoutes.read(HttpMethod.POST, "/messages", rates::handle, tokenQuotas::handle, messages::post);
        DeferredApi deferredApi = new DeferredApi(deferredStore, tokenQuotas, ingest, Clock.systemUTC());
        botRoutes.read(HttpMethod.GET, "/deferred", deferredApi::list);
        botRoutes.write(HttpMethod.POST, "/deferred/replay", deferredApi::replay);
        botRoutes.read(HttpMethod.GET, "/chats/:chatId/replies", messages::replies);
        botRoutes.write(HttpMethod.PUT, ChatsApi.ROLE.substring(API.length()), chatsApi::setRole);
        botRoutes.read(HttpMethod.GET, "/approvals", approvalsApi::list);
        botRoutes.write(HttpMethod.POST, "/approvals/:id", approvalsApi::decide);
        botRoutes.read(HttpMethod.GET, "/dead-letters", deadLetters::list);
        botRoutes.write(HttpMethod.POST, "/dead-letters/:id/replay", deadLetters::replay);
        botRoutes.read(HttpMethod.GET, "/settings", tenantApi::getSettings);
        botRoutes.write(HttpMethod.PUT, "/settings", tenantApi::putSettings);
        // usage: the whole tenant's at /api/v1/usage (below), one bot's under its prefix
        router.get(BOT_PREFIX + "/usage").handler(botScope::handle).handler(tenantApi::usage);
        ProvidersApi providers = new ProvidersApi(providerStore, egress, tenantChanged);
        botRoutes.read(HttpMethod.GET, "/providers", providers::get);
        botRoutes.write(HttpMethod.PUT, "/providers", providers::put);
        botRoutes.write(HttpMethod.DELETE, "/providers", providers::delete);
        McpServersApi mcpServers = new McpServersApi(new BotMcpServerStore(pool, tenantKeys), egress, tenantChanged);
        botRoutes.read(HttpMethod.GET, "/mcp-servers", mcpServers::get);
        botRoutes.write(HttpMethod.PUT, "/mcp-servers", mcpServers::put);
        botRoutes.write(HttpMethod.DELETE, "/mcp-servers", mcpServers::delete);
        botRoutes.read(HttpMethod.GET, "/channels", channels::list);
        botRoutes.write(HttpMethod.POST, "/channels/telegram", channels::addTelegram);
        botRoutes.write(HttpMethod.POST, "/channels/slack", channels::addSlack);
        botRoutes.write(HttpMethod.POST, "/channels/whatsapp", channels::addWhatsApp);
        botRoutes.write(HttpMethod.POST, "/channels/webhook", channels::addInboundWebhook);
        botRoutes.write(HttpMethod.POST, "/channels/webchat", channels::addWebChat);
        botRoutes.write(HttpMethod.POST, "/channels/discord", channels::addDiscord);
        WebhooksApi webhooks = new WebhooksApi(new WebhookStore(pool, tenantKeys), egress);
        botRoutes.read(HttpMethod.GET, "/webhooks", webhooks::list);
        botRoutes.write(HttpMethod.POST, "/webhooks", webhooks::create);
        botRoutes.read(HttpMethod.GET, "/webhooks/:id", webhooks::get);
        botRoutes.write(HttpMethod.PATCH, "/webhooks/:id", webhooks::patch);
        botRoutes.write(HttpMethod.DELETE, "/webhooks/:id", webhooks::delete);
        botRoutes.read(HttpMethod.GET, "/webhooks/:id/deliveries", webhooks::deliveries);
        botRoutes.write(HttpMethod.POST, "/webhooks/:id/deliveries/:deliveryId/retry", webhooks::retry);
        botRoutes.write(HttpMethod.PATCH, "/channels/:id", channels::patch);
        botRoutes.read(HttpMethod.GET, "/channels/:id/senders", channels::senders);
        PairingsApi pairings = new PairingsApi(channelAccess, senderAccess, bots, notices);
        botRoutes.read(HttpMethod.GET, "/pairings", pairings::list);
        botRoutes.write(HttpMethod.POST, "/pairings/:code/approve", pairings::approve);
        botRoutes.write(HttpMethod.DELETE, "/channels/:id", channels::delete);
        String files = WorkspaceApi.FILES.substring(API.length()) + "*";
        botRoutes.read(HttpMethod.GET, "/workspace", workspace::list);
        botRoutes.read(HttpMethod.GET, files, workspace::read);
        botRoutes.write(HttpMethod.PUT, files, workspace::write);
        botRoutes.write(HttpMethod.DELETE, files, workspace::delete);
        botRoutes.read(HttpMethod.GET, "/tasks", tasks::list);
        botRoutes.write(HttpMethod.POST, "/tasks", tasks::create);
        botRoutes.read(HttpMethod.GET, "/tasks/:id", tasks::get);
        botRoutes.write(HttpMethod.PATCH, "/tasks/:id", tasks::update);
        botRoutes.write(HttpMethod.DELETE, "/tasks/:id", tasks::delete);
        botRoutes.read(HttpMethod.GET, "/tasks/:id/runs", tasks::runs);

        // The bots themselves.
        BotsApi botsApi = new BotsApi(botStore, deletions, workspace::ensureDefaults, tenantChanged, tenantDeleter::kick,
                tenantApi::checkedSettings);
        router.get(API + "/bots").handler(botsApi::list);
        write(router, HttpMethod.POST, API + "/bots").handler(botScope::tenantWide).handler(botsApi::create);
        router.get(BOT_PREFIX).handler(botScope::handle).handler(botsApi::get);
        write(router, HttpMethod.PATCH, BOT_PREFIX).handler(botScope::handle).handler(botsApi::update);
        write(router, HttpMethod.DELETE, BOT_PREFIX).handler(botScope::handle).handler(botsApi::delete);
        router.get(API + "/bot-deletions/:botId").handler(botScope::tenantWide).handler(botsApi::deletion);

        // Routes of the whole tenant: refused to a key limited to some bots.
        KeysApi keys = new KeysApi(new KeyStore(pool), tenantChanged, c -> ApiKeyAuth.tenant(c).id(), "tenant admin");
        router.get(API + "/keys").handler(botScope::tenantWide).handler(keys::list);
        write(router, HttpMethod.POST, API + "/keys").handler(botScope::tenantWide).handler(keys::create);
        write(router, HttpMethod.DELETE, API + "/keys/:keyId").handler(botScope::tenantWide).handler(keys::revoke);
        write(router, HttpMethod.POST, API + "/keys/:keyId/rotate").handler(botScope::tenantWide).handler(keys::rotate);
        router.get(API + "/usage").handler(botScope::tenantWide).handler(tenantApi::usage);
        router.get(API + "/audit").handler(botScope::tenantWide).handler(auditApi::list);
        router.get(BOT_PREFIX + "/audit").handler(botScope::handle).handler(auditApi::list);
        ExportApi exportApi = new ExportApi(new TenantExport(ctx.vertx(), pool, Integer.MAX_VALUE, EXPORT_STALL_MS),
                EXPORTS_IN_FLIGHT);
        router.get(API + "/export").handler(botScope::tenantWide).handler(exportApi::export);
        // The OpenAI-compatible API picks the bot from "model".
        router.post("/v1/chat/completions").handler(rates::handle).handler(tokenQuotas::handle).handler(openAi::completions);
        router.get("/v1/models").handler(openAi::models);
        // The operator plane: every tenant, behind the operator's key.
        TenantsAdminApi tenantsAdmin = new TenantsAdminApi(tenants, tenantChanged,
                id -> workspace.ensureDefaults(BotRef.main(id)), deletions, tenantDeleter::kick, usageReports,
                config.limits().tenantDefaults());
        router.route("/admin/*").handler(body);
        router.route("/admin/*").handler(open).handler(operatorAuth::handle);
        router.post("/admin/v1/tenants").handler(tenantsAdmin::create);
        router.get("/admin/v1/tenants").handler(tenantsAdmin::list);
        router.get("/admin/v1/tenants/:id").handler(tenantsAdmin::get);
        router.patch("/admin/v1/tenants/:id").handler(tenantsAdmin::update);
        router.delete("/admin/v1/tenants/:id").handler(tenantsAdmin::delete);
        router.get("/admin/v1/tenants/:id/deletion").handler(tenantsAdmin::deletion);
        router.get("/admin/v1/usage").handler(tenantsAdmin::usage);
        KeysApi operatorKeys = new KeysApi(new KeyStore(pool), tenantChanged, c -> c.pathParam("id"), "operator");
        router.get("/admin/v1/tenants/:id/keys").handler(operatorKeys::list);
        router.post("/admin/v1/tenants/:id/keys").handler(operatorKeys::create);
        router.delete("/admin/v1/tenants/:id/keys/:keyId").handler(operatorKeys::revoke);
        router.post("/admin/v1/tenants/:id/keys/:keyId/rotate").handler(operatorKeys::rotate);
        // Each bot as an MCP server (issue 16): the Origin is checked before anything else (DNS rebinding), then the key
        // as on the API; a key with chat scope may use it (Scopes).
        mcp = new McpEndpoint(ctx.vertx(), new McpSessionStore(pool), new ChatStore(pool), new WorkspaceStore(pool), ingest, rates,
                tokenQuotas, replyWait, ctx.nodeId(), config.mcp(), ctx.metrics());
        router.route("/mcp/*").handler(body);
        router.route("/mcp/*").handler(mcp::origin).handler(open).handler(auth::handle);
        router.post(McpEndpoint.PATH).handler(botScope::handle).handler(mcp::post);
        router.get(McpEndpoint.PATH).handler(botScope::handle).handler(mcp::get);
        router.delete(McpEndpoint.PATH).handler(botScope::handle).handler(mcp::delete);
        mcpSessionsTimer = ctx.vertx().setPeriodic(MCP_SWEEP_MS, id -> mcp.dropIdle()
                .onSuccess(n -> {
                    if (n > 0) {
                        LOG.info("idle MCP sessions ended [count: {}]", n);
                    }
                })
                .onFailure(e -> LOG.warn("idle MCP sessions not dropped: {}", e.getMessage())));
        ctx.readiness().register("gateway", accepting::get);

        Future<Void> defaultTenant = config.apiKey() == null ? Future.succeededFuture()
                : tenants.ensure(DEFAULT_TENANT, "Default tenant", config.apiKey())
                        .compose(t -> workspace.ensureDefaults(BotRef.main(t.id())).map(t))
                        .onSuccess(t -> LOG.info("default tenant ready [tenant: {}]", t.id())).mapEmpty();
        // A tenant suspended, resumed or with a key revoked on any gateway: this one forgets its cached keys now.
        Future<Void> forgetting = ctx.vertx().eventBus().<TenantChanged>consumer(Addresses.TENANT_CHANGED,
                message -> {
                    auth.forget(message.body().tenantId());
                    botScope.forget(message.body().tenantId());
                    botRoles.forget(message.body().tenantId());
                    tokenQuotas.forget(message.body().tenantId());
                }).completion();
        return secretsAtRest(tenantKeys, bots)
                .compose(v -> Future.all(List.of(hub.start(), delivery.start(), defaultTenant, forgetting, mcp.start())))
                .onSuccess(v -> {
                    registerDefaultBot(config, channels);
                    telegramPoller.start();
                    discordGateway.start();
                    webhookDispatcher.start();
                    authFailures.start();
                    tenantDeleter.start();
                    accepting.set(true);
                })
                .mapEmpty();
    }

    /**
     * Before anything is served: every master key the stored data keys name must be here and open them (else the
     * node does not start, naming the key; nothing is decrypted or written). Then tokens stored in plaintext before
     * a master key was configured are sealed and cleared, or, without a master key, counted and warned about.
     */
    private static Future<Void> secretsAtRest(TenantKeys keys, ChannelBotStore bots) {
        return keys.verify().compose(v -> {
            if (keys.masters().isEmpty()) {
                return bots.countPlaintext().map(n -> {
                    if (n > 0) {
                        LOG.warn("{} bot tokens are stored unencrypted and no master key is configured: set CLAWFLEET_MASTER_KEY "
                                + "or CLAWFLEET_MASTER_KEY_FILE to encrypt them; new bots cannot be registered without one", n);
                    }
                    return null;
                });
            }
            return bots.sealPlaintext(SEAL_BATCH).map(sealed -> {
                if (sealed > 0) {
                    LOG.info("bot tokens stored in plaintext are now encrypted [count: {}, master key: {}]", sealed,
                            keys.masters().current().id());
                }
                return null;
            });
        });
    }

    private static final String API = "/api/v1";
    private static final String BOT_PREFIX = API + "/bots/:botId";

    /**
     * Registers a bot's route twice: under {@code /api/v1/bots/{botId}} and, for the default bot, under
     * {@code /api/v1}; {@link BotScope#handle} resolves the bot (or refuses) before the handler runs.
     */
    private record BotRoutes(Router router, BotScope scope) {

        /** A route whose requests are not audited one by one (reads, and message intake: the inbox records it). */
        @SafeVarargs
        final void read(HttpMethod method, String path, Handler<RoutingContext>... handlers) {
            for (String prefix : List.of(API, BOT_PREFIX)) {
                Route route = router.route(method, prefix + path).handler(scope::handle);
                for (Handler<RoutingContext> handler : handlers) {
                    route.handler(handler);
                }
            }
        }

        /** A write route: each request's audit row names the route template. */
        void write(HttpMethod method, String path, Handler<RoutingContext> handler) {
            for (String prefix : List.of(API, BOT_PREFIX)) {
                GatewayRole.write(router, method, prefix + path).handler(scope::handle).handler(handler);
            }
        }
    }

    /** A write route: the audit row of each request names {@code template}, not the raw path. */
    private static Route write(Router router, HttpMethod method, String template) {
        return router.route(method, template).handler(HttpAudit.route(template));
    }

    /**
     * Hosts a tenant's URLs may reach although not public: the operator's list, and the host of the
     * operator's own Telegram API URL (an emulator or a local Bot API server is the operator's choice).
     */
    static List<String> egressAllowed(ClawfleetConfig config) {
        List<String> allowed = new ArrayList<>(config.security().egressAllowedHosts());
        String host = URI.create(config.telegram().apiUrl()).getHost();
        if (host != null) {
            allowed.add(host.startsWith("[") ? host.substring(1, host.length() - 1) : host);
        }
        return allowed;
    }

    /** CLAWFLEET_TELEGRAM_BOT_TOKEN registers the default tenant's bot; a failure is logged, not fatal. */
    private static void registerDefaultBot(ClawfleetConfig config, ChannelsApi channels) {
        if (config.telegram().botToken() == null) {
            return;
        }
        if (config.apiKey() == null) {
            LOG.error("CLAWFLEET_TELEGRAM_BOT_TOKEN is set but there is no default tenant: set CLAWFLEET_API_KEY too");
            return;
        }
        channels.register(BotRef.main(DEFAULT_TENANT), config.telegram().botToken(), config.telegram().apiUrl())
                .onSuccess(bot -> LOG.info("telegram bot ready [bot: {}, tenant: {}]", bot.name(), bot.tenantId()))
                .onFailure(e -> LOG.error("telegram bot not registered: {}", e.getMessage()));
    }

    /** What GET /v1/models lists: "default" and every configured model role. */
    static List<String> modelNames(ClawfleetConfig config) {
        java.util.TreeSet<String> names = new java.util.TreeSet<>(config.llm().roles().keySet());
        names.remove("default");
        List<String> out = new java.util.ArrayList<>();
        out.add("default");
        out.addAll(names);
        return out;
    }

    private void refuseWhenStopping(RoutingContext ctx) {
        if (!accepting.get()) {
            ctx.fail(io.clawfleet.shared.http.ApiException.unavailable("this gateway is shutting down; retry on another", 1));
        } else {
            ctx.next();
        }
    }

    @Override
    public Future<Void> stop() {
        accepting.set(false);
        if (mcpSessionsTimer >= 0) {
            vertx.cancelTimer(mcpSessionsTimer);
        }
        if (rateWindowsTimer >= 0) {
            vertx.cancelTimer(rateWindowsTimer);
        }
        if (sendPacingTimer >= 0) {
            vertx.cancelTimer(sendPacingTimer);
        }
        if (longPollBackstopTimer >= 0) {
            vertx.cancelTimer(longPollBackstopTimer);
        }
        if (hub == null) {
            return Future.succeededFuture();
        }
        if (webhookDispatcher != null) {
            webhookDispatcher.stop();
        }
        return Future.join(List.of(telegramPoller.stop(), discordGateway.stop(), delivery.stop(), hub.stop(), authFailures.stop(), tenantDeleter.stop(),
                        mcp == null ? Future.succeededFuture() : mcp.stop()))
                .mapEmpty();
    }
}
