/* test_quorum.c -- the Redlock arithmetic of src/quorum.c, without Redis:
 * the majority, the validity left, and how N replies become one result,
 * as early as the outcome is certain. */
#include <check.h>
#include <stdlib.h>

#include "hilock/hilock.h"
#include "quorum.h"

static const struct op_result OK = {0, 1, 7};
static const struct op_result BUSY = {HILOCK_EBUSY, 500, 2};
static const struct op_result DOWN = {HILOCK_ECONN, 0, 0};

/* Decide kind over n results of which the first got are in. */
static int decide(enum op_kind kind, size_t n, const struct op_result *res,
                  size_t got, struct op_result *out)
{
    unsigned char g[QUORUM_NODES_MAX] = {0};
    for (size_t i = 0; i < got; i++)
        g[i] = 1;
    return quorum_decide(kind, n, res, g, out);
}

START_TEST(majority_and_validity)
{
    ck_assert_uint_eq(quorum_of(1), 1);
    ck_assert_uint_eq(quorum_of(3), 2);
    ck_assert_uint_eq(quorum_of(5), 3);
    ck_assert_uint_eq(quorum_of(9), 5);
    /* 10 000 ms lease: the allowance is 100 + 2 ms */
    ck_assert_int_eq(quorum_validity(10000, 0), 9898);
    ck_assert_int_eq(quorum_validity(10000, 9898), 0);
    ck_assert_int_lt(quorum_validity(100, 200), 0);
}
END_TEST

START_TEST(one_node_passes_its_reply_through)
{
    struct op_result out;
    struct op_result busy[1] = {BUSY};
    struct op_result down[1] = {DOWN};
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 1, busy, 0, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 1, busy, 1, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EBUSY);
    ck_assert_int_eq(out.a, 500);
    ck_assert_int_eq(decide(OP_KIND_RELEASE, 1, down, 1, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_ECONN);
}
END_TEST

START_TEST(acquire_is_decided_by_the_first_majority)
{
    struct op_result res[5] = {OK, {0, 1, 9}, OK, DOWN, DOWN};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 5, res, 2, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 5, res, 3, &out), 1);
    ck_assert_int_eq(out.status, 0);
    ck_assert_int_eq(out.b, 9); /* the largest token of the majority */
}
END_TEST

START_TEST(acquire_fails_once_a_majority_is_out_of_reach)
{
    struct op_result down[3] = {DOWN, DOWN, OK};
    struct op_result busy[3] = {BUSY, OK, {HILOCK_EBUSY, 300, 4}};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, down, 1, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, down, 2, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_ENOQUORUM);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, busy, 3, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EBUSY);
    ck_assert_int_eq(out.a, 300); /* the soonest a holder's lease ends */
    ck_assert_int_eq(out.b, 4);   /* and what that reply said */
}
END_TEST

START_TEST(queries_wait_for_every_node_and_take_what_a_majority_has)
{
    struct op_result ttl[3] = {{0, 900, 0}, {0, -1, 0}, {0, 400, 0}};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_QUERY_TTL, 3, ttl, 2, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_QUERY_TTL, 3, ttl, 3, &out), 1);
    ck_assert_int_eq(out.status, 0);
    ck_assert_int_eq(out.a, 400); /* a majority still has 400 ms */
    struct op_result held[3] = {{0, 1, 0}, {0, 0, 0}, DOWN};
    ck_assert_int_eq(decide(OP_KIND_QUERY_HELD, 3, held, 3, &out), 1);
    ck_assert_int_eq(out.a, 0); /* held on one of three: not held */
}
END_TEST

START_TEST(renewals_are_decided_per_lock)
{
    /* three nodes, two locks: lock 0 renewed on two, lock 1 gone on two */
    unsigned char ok[6] = {RENEW_OK, RENEW_GONE, RENEW_OK, RENEW_GONE,
                           RENEW_UNKNOWN, RENEW_OK};
    unsigned char out[2];
    quorum_renew(3, 2, ok, out);
    ck_assert_int_eq(out[0], RENEW_OK);
    ck_assert_int_eq(out[1], RENEW_GONE);
    unsigned char split[3] = {RENEW_OK, RENEW_GONE, RENEW_UNKNOWN};
    quorum_renew(3, 1, split, out);
    ck_assert_int_eq(out[0], RENEW_UNKNOWN); /* retried, not lost yet */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quorum");
    TCase *tc = tcase_create("quorum");
    tcase_add_test(tc, majority_and_validity);
    tcase_add_test(tc, one_node_passes_its_reply_through);
    tcase_add_test(tc, acquire_is_decided_by_the_first_majority);
    tcase_add_test(tc, acquire_fails_once_a_majority_is_out_of_reach);
    tcase_add_test(tc, queries_wait_for_every_node_and_take_what_a_majority_has);
    tcase_add_test(tc, renewals_are_decided_per_lock);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
