/* SPDX-License-Identifier: MIT */
/* The helper gives up its privileges: user, capabilities (and their bounding set), no_new_privs. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine/confine-impl.h"

int conf_user_lookup(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (getpwnam_r(name, &pw, buf, sizeof(buf), &found) != 0 || !found)
		return -ENOENT;
	*uid = found->pw_uid;
	*gid = found->pw_gid;
	return 0;
}

/*
 * Empties the bounding set, so that nothing the helper could still execute
 * regains a capability.  Needs CAP_SETPCAP: without it (cprof not root) the
 * helper has none to regain anyway, and no_new_privs forbids it.
 */
static void drop_bounding_set(void)
{
	int cap;

	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break;
}

/* Permitted, effective and inheritable sets emptied, ambient ones too. */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

int conf_drop_privileges(uid_t uid, gid_t gid)
{
	struct rlimit no_core = { 0, 0 };
	int ret;

	/* a crash leaves no core file of what it parsed */
	setrlimit(RLIMIT_CORE, &no_core);
	if (geteuid() == 0) {
		drop_bounding_set();
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			return -errno;
		/* root's uid back would bring its capabilities back */
		if (uid == 0 || setuid(0) == 0)
			return -EPERM;
	}
	ret = drop_capabilities();
	if (ret < 0)
		return ret;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
