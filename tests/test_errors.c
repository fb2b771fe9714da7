/* test_errors.c -- every code of HILOCK_ERRNO_MAP has its message and name,
 * and unknown values get the documented fallbacks. Needs no Redis. */
#include "testutil.h"

#include <string.h>

struct code {
    int value;
    const char *name;
    const char *msg;
};

static const struct code codes[] = {
#define CODE_(name, value, msg) {(value), "HILOCK_" #name, (msg)},
    HILOCK_ERRNO_MAP(CODE_)
#undef CODE_
};
#define NCODES ((int)(sizeof codes / sizeof codes[0]))

START_TEST(strerror_gives_each_code_its_message)
{
    const struct code *c = &codes[_i];
    const char *msg = hilock_strerror(c->value);
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg, c->msg);
}
END_TEST

START_TEST(err_name_gives_each_code_its_symbol)
{
    const struct code *c = &codes[_i];
    const char *name = hilock_err_name(c->value);
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(name, c->name);
}
END_TEST

START_TEST(codes_are_negative_and_distinct)
{
    for (int i = 0; i < NCODES; i++) {
        ck_assert_int_lt(codes[i].value, 0);
        for (int j = i + 1; j < NCODES; j++)
            ck_assert_int_ne(codes[i].value, codes[j].value);
    }
}
END_TEST

static const int unknown[] = {1, 42, -19, -100, -1000, INT32_MIN, INT32_MAX};

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
    tcase_add_loop_test(tc, strerror_gives_each_code_its_message, 0, NCODES);
    tcase_add_loop_test(tc, err_name_gives_each_code_its_symbol, 0, NCODES);
    tcase_add_test(tc, codes_are_negative_and_distinct);
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
