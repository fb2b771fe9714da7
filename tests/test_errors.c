/* test_errors.c -- hilock_strerror() and hilock_err_name() for every code:
 * the values and names are pinned as the ABI has them, each code has a
 * message of its own, and 0 and unknown values get the documented
 * fallbacks. Needs no Redis. */
#include "testutil.h"

#include <string.h>

/* Golden literals, written out rather than generated from
 * HILOCK_ERRNO_MAP: a renumbered or renamed code must fail here. */
static const struct {
    int value;
    const char *name;
} pinned[] = {
    {-1, "HILOCK_EINVAL"},     {-2, "HILOCK_ENOMEM"},
    {-3, "HILOCK_ECONN"},      {-4, "HILOCK_ETIMEDOUT"},
    {-5, "HILOCK_EBUSY"},      {-6, "HILOCK_ENOTOWNER"},
    {-7, "HILOCK_ELOST"},      {-8, "HILOCK_ECANCELED"},
    {-9, "HILOCK_ENOQUORUM"},  {-10, "HILOCK_EPROTO"},
    {-11, "HILOCK_ESERVER"},   {-12, "HILOCK_EINPROGRESS"},
    {-13, "HILOCK_ERANDOM"},   {-14, "HILOCK_EAUTH"},
    {-15, "HILOCK_ENOPERM"},   {-16, "HILOCK_EREADONLY"},
    {-17, "HILOCK_EOOM"},      {-18, "HILOCK_EWRONGTYPE"},
    {-19, "HILOCK_ENOREPLICA"},
    {-20, "HILOCK_EDEADLK"},   {-21, "HILOCK_EWRONGKIND"},
    {-22, "HILOCK_ETLS"},
    {-23, "HILOCK_ENOTCLUSTER"},
    {-24, "HILOCK_EGUARDED"},
};
#define NPINNED ((int)(sizeof pinned / sizeof pinned[0]))

START_TEST(err_name_gives_each_pinned_value_its_name)
{
    ck_assert_str_eq(hilock_err_name(pinned[_i].value), pinned[_i].name);
}
END_TEST

/* The list has exactly the pinned codes: one more would be below the
 * last. */
START_TEST(no_code_lies_beyond_the_pinned_ones)
{
    int next = pinned[NPINNED - 1].value - 1;
    ck_assert_str_eq(hilock_err_name(next), "UNKNOWN");
    ck_assert_str_eq(hilock_strerror(next), "unknown error");
}
END_TEST

/* Every code has a message, and no two codes read alike. */
START_TEST(each_code_has_a_message_of_its_own)
{
    for (int i = 0; i < NPINNED; i++) {
        const char *msg = hilock_strerror(pinned[i].value);
        ck_assert_ptr_nonnull(msg);
        ck_assert_msg(strlen(msg) > 0 && strcmp(msg, "unknown error") != 0 &&
                          strcmp(msg, "success") != 0,
                      "%s reads \"%s\"", pinned[i].name, msg);
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(msg, hilock_strerror(pinned[j].value)) != 0,
                          "%s and %s share \"%s\"", pinned[i].name,
                          pinned[j].name, msg);
    }
}
END_TEST

static const int unknown[] = {1, 42, -25, -100, -1000, INT32_MIN, INT32_MAX};

START_TEST(strerror_of_unknown_values_is_unknown_error)
{
    const char *msg = hilock_strerror(unknown[_i]);
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg, "unknown error");
}
END_TEST

START_TEST(err_name_of_unknown_values_is_unknown)
{
    const char *name = hilock_err_name(unknown[_i]);
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(name, "UNKNOWN");
}
END_TEST

/* 0 is the success status every callback can get; the header names it. */
START_TEST(zero_is_success_and_has_its_own_strings)
{
    ck_assert_str_eq(hilock_strerror(0), "success");
    ck_assert_str_eq(hilock_err_name(0), "OK");
}
END_TEST

START_TEST(strings_are_static_and_stable)
{
    const char *a = hilock_strerror(HILOCK_EBUSY);
    const char *b = hilock_strerror(HILOCK_ELOST);
    ck_assert_ptr_eq(hilock_strerror(HILOCK_EBUSY), a);
    ck_assert_str_eq(a, "lock is held by another owner");
    ck_assert_str_eq(b, "lock was lost");
    ck_assert_ptr_eq(hilock_err_name(HILOCK_EBUSY), hilock_err_name(-5));
}
END_TEST

static Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("codes");
    int nunknown = (int)(sizeof unknown / sizeof unknown[0]);
    tcase_add_loop_test(tc, err_name_gives_each_pinned_value_its_name, 0,
                        NPINNED);
    tcase_add_test(tc, no_code_lies_beyond_the_pinned_ones);
    tcase_add_test(tc, each_code_has_a_message_of_its_own);
    tcase_add_loop_test(tc, strerror_of_unknown_values_is_unknown_error, 0,
                        nunknown);
    tcase_add_loop_test(tc, err_name_of_unknown_values_is_unknown, 0,
                        nunknown);
    tcase_add_test(tc, zero_is_success_and_has_its_own_strings);
    tcase_add_test(tc, strings_are_static_and_stable);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(errors_suite());
}
