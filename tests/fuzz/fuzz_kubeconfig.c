/* fuzz_kubeconfig: the kubeconfig loader (libcommon/kubeconfig*.c, libyaml
 * underneath) on a file holding the input, named by --kubeconfig as a user
 * would. Nothing else is read: no $KUBECONFIG, no ~/.kube/config, no
 * in-cluster files. Oracle: no crash, sanitizer report or leak; a config
 * that loads has a server; a failure is RS_ECONFIG, RS_EIO or RS_ENOMEM. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeconfig.h"
#include "line.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/rs-fuzz-kubeconfig.XXXXXX";
static char path[64];

static void
cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static void
setup(void)
{

	rs_log_init("fuzz_kubeconfig");
	rs_log_set_verbosity(0);
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	setenv("HOME", "/nonexistent", 1);
	setenv("RS_SERVICEACCOUNT_DIR", "/nonexistent", 1);
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/config", dir);
	atexit(cleanup);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct rs_kube_config_opts o = { 0 };
	struct rs_kube_config *c = NULL;
	rs_code rc;
	int fd;

	if (!ready) {
		setup();
		ready = 1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || rs_write_all(fd, data, size) != RS_OK)
		abort();
	close(fd);
	o.kubeconfig = path;
	/* half the inputs also pick a context by name, from the data */
	if (size > 2 && data[0] == '#' && data[1] == 'c')
		o.context = "c";
	rc = rs_kube_config_load(&o, &c);
	if (rc == RS_OK) {
		if (c == NULL || c->server == NULL || c->server[0] == '\0')
			abort();
		rs_kube_config_free(c);
	} else if (rc != RS_ECONFIG && rc != RS_EIO && rc != RS_ENOMEM) {
		abort();
	}
	return 0;
}
