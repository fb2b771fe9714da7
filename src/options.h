/* SPDX-License-Identifier: BSD-3-Clause */
/* options.h -- checking and copying the client's options. */
#ifndef HILOCK_OPTIONS_H
#define HILOCK_OPTIONS_H

#include "hilock/hilock.h"

struct hilock_client;

/* Room for the text of an option refused by options_check. */
#define OPTIONS_WHY_MAX 224

/* Reject options no client could work with: HILOCK_EINVAL, with which
 * option is wrong and why in why (OPTIONS_WHY_MAX bytes); else 0. */
int options_check(const struct hilock_options *o, char *why);
/* Copy o into c->opts, its strings into one block owned by c (c->strings)
 * and the topology's endpoints into c->eps. 0 or HILOCK_ENOMEM. */
int options_copy(struct hilock_client *c, const struct hilock_options *o);

#endif
