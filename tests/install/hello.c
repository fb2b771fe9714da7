/* SPDX-License-Identifier: BSD-3-Clause */
/* hello.c -- built by tests/install/run.sh against the staged install only
 * (pkg-config hilock), to prove the installed header, library and .pc file
 * are usable by an outside program. Prints one error message and the
 * version, and creates and frees a client on a fresh event_base. */
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include <hilock/hilock.h>

int main(void)
{
    struct event_base *base = event_base_new();
    struct hilock_options opts;
    struct hilock_client *client = NULL;
    hilock_options_init(&opts);
    if (!base || hilock_client_new(base, &opts, &client) != 0)
        return 1;
    hilock_client_free(client);
    event_base_free(base);
    printf("%s\n", hilock_strerror(HILOCK_EBUSY));
    printf("hilock %d.%d.%d\n", HILOCK_VERSION_MAJOR, HILOCK_VERSION_MINOR,
           HILOCK_VERSION_PATCH);
    return strcmp(hilock_err_name(HILOCK_EBUSY), "HILOCK_EBUSY") != 0;
}
