package io.clawfleet.worker.turn;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class QueueBudgetTest {

    private static int fill(QueueBudget budget, String tenant) {
        int taken = 0;
        while (budget.tryAcquire(tenant)) {
            taken++;
        }
        return taken;
    }

    @Test
    void aTenantAloneHoldsAtMostHalf() {
        QueueBudget budget = new QueueBudget(100);
        assertThat(fill(budget, "a")).isEqualTo(50);
        assertThat(budget.hasRoom("a")).isFalse();
        assertThat(budget.used()).isEqualTo(50);
    }

    @Test
    void aTenantHoldingNothingFindsRoomWhateverTheOthersHold() {
        // given three tenants flooding one after another
        QueueBudget budget = new QueueBudget(100);
        fill(budget, "a");
        fill(budget, "b");
        fill(budget, "c");
        // then a fourth still gets in
        assertThat(budget.hasRoom("d")).isTrue();
        assertThat(budget.tryAcquire("d")).isTrue();
    }

    @Test
    void tenantsFloodingTogetherGetEqualParts() {
        // given three tenants taking one place each in turn for as long as they may
        QueueBudget budget = new QueueBudget(100);
        boolean any = true;
        while (any) {
            any = false;
            for (String tenant : new String[] {"a", "b", "c"}) {
                any |= budget.tryAcquire(tenant);
            }
        }
        // then each holds a quarter, and a quarter stays free for anyone else
        assertThat(budget.held("a")).isEqualTo(25);
        assertThat(budget.held("b")).isEqualTo(25);
        assertThat(budget.held("c")).isEqualTo(25);
    }

    @Test
    void placesGivenBackCanBeTakenAgain() {
        QueueBudget budget = new QueueBudget(10);
        fill(budget, "a");
        budget.release("a", 5);
        assertThat(budget.used()).isZero();
        assertThat(budget.held("a")).isZero();
        assertThat(fill(budget, "a")).isEqualTo(5);
    }

    @Test
    void givingBackMoreThanHeldCannotFreeAnotherTenantsPlaces() {
        QueueBudget budget = new QueueBudget(10);
        budget.tryAcquire("a");
        budget.tryAcquire("b");
        budget.release("a", 3);
        assertThat(budget.used()).isEqualTo(1);
        assertThat(budget.held("b")).isEqualTo(1);
    }
}
