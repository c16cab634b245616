package io.clawfleet.worker.turn;

import io.clawfleet.shared.store.BotRef;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

class FairShareTest {

    /** A chat waiting for a slot: which bot it belongs to, its partition, and a name to follow it by. */
    private record Chat(String name, BotRef bot, int partition) {
    }

    private static Chat chat(String tenant, String bot, int n) {
        return new Chat(tenant + "/" + bot + "#" + n, new BotRef(tenant, bot), n % 4);
    }

    private static FairShare<Chat> equal() {
        return FairShare.equalShares(Chat::bot);
    }

    /** Takes {@code count} entries (as slots free one by one) and returns who got them. */
    private static List<Chat> serve(FairShare<Chat> share, int count) {
        List<Chat> served = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Chat next = share.poll();
            if (next == null) {
                break;
            }
            served.add(next);
        }
        return served;
    }

    private static Map<String, Long> countBy(List<Chat> chats, Function<Chat, String> key) {
        return chats.stream().collect(Collectors.groupingBy(key, Collectors.counting()));
    }

    @Test
    void aQuietTenantsChatIsServedWithinTheNextSlotsDespiteAFloodQueuedBeforeIt() {
        // given tenant A with 100 chats waiting, then tenant B with one
        FairShare<Chat> share = equal();
        for (int i = 0; i < 100; i++) {
            share.add(chat("a", "main", i));
        }
        Chat quiet = chat("b", "main", 0);
        share.add(quiet);
        // when the next two slots free up
        List<Chat> served = serve(share, 2);
        // then B's chat got one of them
        assertThat(served).contains(quiet);
    }

    @Test
    void aQuietTenantArrivingWhileAFloodIsServedWaitsAtMostOneTurn() {
        // given A's flood being served for a while
        FairShare<Chat> share = equal();
        for (int i = 0; i < 100; i++) {
            share.add(chat("a", "main", i));
        }
        serve(share, 30);
        // when B's chat arrives behind 70 of A's
        Chat quiet = chat("b", "main", 0);
        share.add(quiet);
        // then it is served within the next two slots
        assertThat(serve(share, 2)).contains(quiet);
    }

    @Test
    void chatsOfOneBotAreServedInArrivalOrder() {
        FairShare<Chat> share = equal();
        List<Chat> chats = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            chats.add(chat("a", "main", i));
            share.add(chats.get(i));
        }
        assertThat(serve(share, 10)).containsExactlyElementsOf(chats);
    }

    @Test
    void twoFloodingTenantsAlternate() {
        FairShare<Chat> share = equal();
        for (int i = 0; i < 50; i++) {
            share.add(chat("a", "main", i));
        }
        for (int i = 0; i < 10; i++) {
            share.add(chat("b", "main", i));
        }
        List<Chat> served = serve(share, 20);
        assertThat(countBy(served, c -> c.bot().tenantId())).containsEntry("a", 10L).containsEntry("b", 10L);
        // and once B has nothing left, A gets every slot (shares are of what is contended, nothing idles)
        assertThat(serve(share, 40)).allMatch(c -> c.bot().tenantId().equals("a"));
    }

    @Test
    void slotsFollowTheTenantsWeights() {
        // given A weighs 3, B and C weigh 1, all with plenty waiting
        FairShare<Chat> share = new FairShare<>(tenant -> tenant.equals("a") ? 3 : 1, Chat::bot);
        for (int i = 0; i < 100; i++) {
            share.add(chat("a", "main", i));
            share.add(chat("b", "main", i));
            share.add(chat("c", "main", i));
        }
        // when 50 slots are handed out
        Map<String, Long> byTenant = countBy(serve(share, 50), c -> c.bot().tenantId());
        // then A gets three fifths of them, B and C one fifth each
        assertThat(byTenant.get("a")).isEqualTo(30L);
        assertThat(byTenant.get("b")).isEqualTo(10L);
        assertThat(byTenant.get("c")).isEqualTo(10L);
    }

    @Test
    void botsOfOneTenantShareItsSlotsAndDoNotEnlargeIt() {
        // given tenant A with bots x (40 chats) and y (4 chats), and tenant B with one bot (40 chats)
        FairShare<Chat> share = equal();
        for (int i = 0; i < 40; i++) {
            share.add(chat("a", "x", i));
            share.add(chat("b", "main", i));
        }
        for (int i = 0; i < 4; i++) {
            share.add(chat("a", "y", i));
        }
        // when 16 slots are handed out
        List<Chat> served = serve(share, 16);
        // then A's two bots split A's half, and B still gets its half
        assertThat(countBy(served, c -> c.bot().tenantId())).containsEntry("a", 8L).containsEntry("b", 8L);
        assertThat(countBy(served, c -> c.bot().toString())).containsEntry("a/x", 4L).containsEntry("a/y", 4L);
    }

    @Test
    void aTenantIdleForLongHasBankedNoCredit() {
        // given B served a little, then idle while A alone is served 1,000 times
        FairShare<Chat> share = equal();
        share.add(chat("b", "main", -1));
        serve(share, 1);
        for (int i = 0; i < 1_000; i++) {
            share.add(chat("a", "main", i));
        }
        serve(share, 900);
        // when B comes back with a flood of its own
        for (int i = 0; i < 100; i++) {
            share.add(chat("b", "main", i));
        }
        // then it shares from now on; it does not get the 900 turns it "missed" in a burst
        Map<String, Long> byTenant = countBy(serve(share, 20), c -> c.bot().tenantId());
        assertThat(byTenant.get("a")).isBetween(9L, 11L);
        assertThat(byTenant.get("b")).isBetween(9L, 11L);
    }

    @Test
    void leavingAndComingBackGainsNoExtraTurn() {
        // given A with plenty waiting and B with one chat, which is served and comes straight back
        FairShare<Chat> share = equal();
        for (int i = 0; i < 100; i++) {
            share.add(chat("a", "main", i));
        }
        Chat quiet = chat("b", "main", 0);
        List<Chat> served = new ArrayList<>();
        for (int round = 0; round < 20; round++) {
            share.add(quiet);
            Chat next = share.poll();
            served.add(next);
        }
        // then B, re-queued after each of its turns, still gets only every other slot
        assertThat(countBy(served, c -> c.bot().tenantId())).containsEntry("a", 10L).containsEntry("b", 10L);
    }

    @Test
    void aChatWaitsOnceHoweverOftenItAsks() {
        FairShare<Chat> share = equal();
        Chat one = chat("a", "main", 0);
        assertThat(share.add(one)).isTrue();
        assertThat(share.add(one)).isFalse();
        assertThat(share.size()).isEqualTo(1);
        assertThat(share.poll()).isEqualTo(one);
        assertThat(share.poll()).isNull();
        assertThat(share.isEmpty()).isTrue();
    }

    @Test
    void theChatsOfALostPartitionAreDropped() {
        // given chats of A and B in partitions 0..3
        FairShare<Chat> share = equal();
        for (int i = 0; i < 8; i++) {
            share.add(chat("a", "main", i));
        }
        share.add(chat("b", "main", 1));
        // when partition 1 is lost (B's only chat is in it)
        share.removeIf(c -> c.partition() == 1);
        // then only A's other chats remain, and B is not served an empty turn
        List<Chat> served = serve(share, 20);
        assertThat(served).hasSize(6).noneMatch(c -> c.partition() == 1);
        assertThat(share.isEmpty()).isTrue();
        assertThat(share.contains(chat("a", "main", 1))).isFalse();
    }

    @Test
    void idleTenantsAreForgottenOnceTheirLastTurnIsPast() {
        // given ten tenants served one turn each
        FairShare<Chat> share = equal();
        for (int i = 0; i < 10; i++) {
            share.add(chat("t" + i, "main", i));
        }
        serve(share, 10);
        // then right away they are remembered (coming back now must not win them a second turn early)
        share.forgetIdle();
        assertThat(share.tenantsKnown()).isEqualTo(10);
        // when another tenant's turns move the virtual time past theirs
        for (int i = 0; i < 3; i++) {
            share.add(chat("a", "main", i));
        }
        serve(share, 2);
        share.forgetIdle();
        // then only the tenant still waiting is remembered
        assertThat(share.tenantsKnown()).isEqualTo(1);
        assertThat(share.poll()).isEqualTo(chat("a", "main", 2));
    }

    @Test
    void aTenantAtItsTurnLimitIsPassedOverAndServedFirstWhenItMayStartAgain() {
        // given tenants a and b with chats waiting, and a held at its concurrent-turn limit
        FairShare<Chat> share = equal();
        for (int i = 0; i < 4; i++) {
            share.add(chat("a", "main", i));
            share.add(chat("b", "main", i));
        }
        java.util.Set<String> blocked = new java.util.HashSet<>(List.of("a"));
        // when three slots free up while a may not start
        List<Chat> served = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            served.add(share.poll(tenant -> !blocked.contains(tenant)));
        }
        // then b got them all, and a's chats are all still waiting
        assertThat(served).extracting(c -> c.bot().tenantId()).containsOnly("b");
        assertThat(share.size()).isEqualTo(5);
        // when a may start again, it gets the turn it was due, then resumes at the present (b, which took three
        // turns meanwhile, is a turn ahead of it), and no more: it has banked nothing for the time it was held
        blocked.clear();
        assertThat(serve(share, 4)).extracting(c -> c.bot().tenantId()).containsExactly("a", "a", "b", "a");
        // and with every waiting tenant blocked, nothing is served and nothing is lost
        blocked.addAll(List.of("a", "b"));
        assertThat(share.poll(tenant -> !blocked.contains(tenant))).isNull();
        assertThat(share.size()).isEqualTo(1);
    }
}
