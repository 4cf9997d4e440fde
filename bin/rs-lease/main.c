/* rs-lease: hold a Lease, and run prog only while holding it.
 * main parses flags and wires: the API client, the signals (blocked, read
 * from a signalfd by the election loop) and the loop. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "elect.h"
#include "kube.h"
#include "clientflags.h"
#include "kubeconfig.h"
#include "lease.h"
#include "flag.h"
#include "log.h"
#include "run.h"
#include "shardmode.h"

#define USAGE "usage: rs-lease [flags] NAME prog...\n" \
"       rs-lease --shards B [--shard-file F] [--fence F] [flags] NAME prog...\n" \
"       rs-lease --list [flags] NAME\n"
#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static const char help_text[] =
USAGE
"Hold the coordination.k8s.io/v1 Lease NAME and run prog only while holding\n"
"it, as client-go's leader election does (kube-controller-manager's flags).\n"
"Flags end at NAME: the ones after it are prog's.\n"
"\n"
"prog runs under a guard process, in a process group of its own. To stop it\n"
"(lease lost, TERM, or prog gone with processes left behind) the group gets\n"
"SIGTERM, then SIGKILL after --kill-after; the guard waits until the group\n"
"is empty. If rs-lease dies (even by SIGKILL), the guard gets SIGTERM from\n"
"the kernel (PR_SET_PDEATHSIG) and stops the group the same way.\n"
"A lost lease (renew deadline passed, or another holder seen) stops prog\n"
"and exits 111; rs-lease does not try again.\n"
"\n"
"With --shards B, NAME is a group: the namespaces' hash space is cut into\n"
"B buckets, each a Lease NAME-b-NNN, and each instance has a member Lease\n"
"NAME-m-HASH; every instance holds its fair share, ceil(B / live members).\n"
"prog runs while some bucket is held and is restarted when the held set\n"
"changes; it reads the set from the shard file (RS_SHARD_FILE in its\n"
"environment) and may write for a bucket only until the time in the fence\n"
"file (RS_FENCE_FILE). Nothing held stops prog; rs-lease goes on trying.\n"
"--list prints who holds which bucket of the group NAME, and its members.\n"
"\n"
"Flags:\n"
"      --lease-namespace NS      namespace of the Lease (default: the\n"
"                                service account's, else kube-system);\n"
"                                alias --leader-elect-resource-namespace\n"
"      --leader-elect-resource-name NAME\n"
"                                the Lease (then NAME is not given)\n"
"      --leader-elect-lease-duration DUR\n"
"                                how long a candidate waits, after it last\n"
"                                saw the record change, before taking the\n"
"                                lease (default 15s)\n"
"      --leader-elect-renew-deadline DUR\n"
"                                how long the leader tries to renew before\n"
"                                it gives up (default 10s)\n"
"      --leader-elect-retry-period DUR\n"
"                                time between tries (default 2s)\n"
"      --identity ID             this candidate's name (default: hostname\n"
"                                _ random UUID)\n"
"      --kill-after DUR          SIGTERM to SIGKILL, for prog (default 3s)\n"
"      --shards B                shard mode with B buckets (1 to 256)\n"
"      --shard-file F            shard mode: write the held set to F (JSON)\n"
"      --fence F                 shard mode: keep the fence file F\n"
"      --list                    print the shard group NAME and exit\n"
"      --kubeconfig PATH         kubeconfig file (default: $KUBECONFIG,\n"
"                                ~/.kube/config, then in-cluster)\n"
"      --context NAME            kubeconfig context\n"
"      --master URL              API server URL, overriding the kubeconfig\n"
"  -v, --v N                     log verbosity: 0 acquired, lost, released;\n"
"                                1 holders seen, prog's start and end;\n"
"                                2 conflicts; 4 requests\n"
"      --log-format F            text (default) or json\n"
"  -h, --help                    this help\n"
"\n"
"Signals: TERM and INT stop prog, release the lease and exit 0.\n"
"Exit: prog's exit code when prog ended on its own (the lease released),\n"
"0 after TERM or INT, 100 usage, 111 lease lost or temporary failure.\n";

enum {
	OPT_NS = 256, OPT_NAME, OPT_DURATION, OPT_DEADLINE, OPT_RETRY,
	OPT_IDENTITY, OPT_KILL, OPT_SHARDS, OPT_SHARD_FILE, OPT_FENCE,
	OPT_LIST,
};

static const struct option own_opts[] = {
	{ "lease-namespace", required_argument, NULL, OPT_NS },
	{ "leader-elect-resource-namespace", required_argument, NULL, OPT_NS },
	{ "leader-elect-resource-name", required_argument, NULL, OPT_NAME },
	{ "leader-elect-lease-duration", required_argument, NULL, OPT_DURATION },
	{ "leader-elect-renew-deadline", required_argument, NULL, OPT_DEADLINE },
	{ "leader-elect-retry-period", required_argument, NULL, OPT_RETRY },
	{ "identity", required_argument, NULL, OPT_IDENTITY },
	{ "kill-after", required_argument, NULL, OPT_KILL },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "shard-file", required_argument, NULL, OPT_SHARD_FILE },
	{ "fence", required_argument, NULL, OPT_FENCE },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct flags {
	struct shard_opts so;
	struct rs_client_flags cf;
	int list;
};

/* DNS label (namespace) or subdomain (name): also keeps the URL clean. */
static int
dns_ok(const char *s, size_t max, int dots)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		    (dots && s[i] == '.')))
			return 0;
	return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' &&
	    s[n - 1] != '.';
}

static void
parse_flags(int argc, char **argv, struct flags *f)
{
	struct option *longopts = rs_flags_longopts(own_opts,
	    RS_FLAGS_LOG | RS_FLAGS_API);
	int c;

	/* "+": flags end at NAME or prog; prog's own flags are prog's. */
	while ((c = getopt_long(argc, argv, "+v:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NS: f->so.eo.ns = optarg; break;
		case OPT_NAME: f->so.eo.name = optarg; break;
		case OPT_DURATION:
			f->so.eo.lease_duration = rs_flag_duration(optarg,
			    "--leader-elect-lease-duration");
			break;
		case OPT_DEADLINE:
			f->so.eo.renew_deadline = rs_flag_duration(optarg,
			    "--leader-elect-renew-deadline");
			break;
		case OPT_RETRY:
			f->so.eo.retry_period = rs_flag_duration(optarg,
			    "--leader-elect-retry-period");
			break;
		case OPT_IDENTITY: f->so.eo.identity = optarg; break;
		case OPT_KILL: f->so.eo.kill_after = rs_flag_duration(optarg, "--kill-after");
			break;
		case OPT_SHARDS:
			f->so.nbuckets = (unsigned)rs_flag_long(optarg, 1,
			    SHARD_MAX, "--shards");
			break;
		case OPT_SHARD_FILE: f->so.shard_file = optarg; break;
		case OPT_FENCE: f->so.fence = optarg; break;
		case OPT_LIST: f->list = 1; break;
		case 'h':
			fputs(help_text, stdout);
			exit(0);
		default:
			if (!rs_flags_common(c, optarg, &f->cf))
				rs_flag_fail("%s", "invalid flag");
		}
	}
	if (f->so.eo.name == NULL && optind < argc)
		f->so.eo.name = argv[optind++];
	if (f->so.eo.name == NULL)
		rs_flag_fail("%s", "no lease name");
	if ((f->so.shard_file || f->so.fence) && f->so.nbuckets == 0)
		rs_flag_fail("%s", "--shard-file and --fence need --shards");
	if (f->list && optind < argc)
		rs_flag_fail("%s", "--list runs no prog");
	if (!f->list && optind >= argc)
		rs_flag_fail("%s", "no prog to run");
}

/* client-go's NewLeaderElector checks, and whole seconds for the Lease. */
static void
check_timing(const struct elect_opts *o, int fenced)
{
	if (o->lease_duration < 1000000000LL)
		rs_flag_fail("%s must be at least 1s", "--leader-elect-lease-duration");
	if (o->lease_duration <= o->renew_deadline)
		rs_flag_fail("%s must be longer than the renew deadline",
		    "--leader-elect-lease-duration");
	if (o->retry_period <= 0)
		rs_flag_fail("%s must be positive", "--leader-elect-retry-period");
	if ((double)o->renew_deadline <= 1.2 * (double)o->retry_period)
		rs_flag_fail("%s must be longer than 1.2 times the retry period",
		    "--leader-elect-renew-deadline");
	/* The fence's margin (doc/rs-lease.1): a write sent at the renew
	 * deadline must reach the server before another instance may take
	 * the bucket; half a second is the least that leaves it a chance. */
	if (fenced && o->lease_duration - o->renew_deadline < 500000000LL)
		rs_flag_fail("%s must exceed the renew deadline by at least "
		    "500ms with --fence", "--leader-elect-lease-duration");
	if (!fenced && o->renew_deadline + o->kill_after >= o->lease_duration)
		rs_warn("renew deadline + kill-after is not shorter than the "
		    "lease duration: prog may still run when another candidate "
		    "takes over");
}

/* The service account's namespace when in a pod, as upstream components
 * put their lock beside themselves; kube-system otherwise. */
static const char *
default_ns(void)
{
	static char buf[64];
	const char *dir = getenv("RS_SERVICEACCOUNT_DIR");
	char path[4096];
	FILE *fp;
	size_t n;

	snprintf(path, sizeof path, "%s/namespace", dir && *dir ? dir : SA_DIR);
	if ((fp = fopen(path, "re")) == NULL)
		return "kube-system";
	n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	buf[strcspn(buf, " \t\r\n")] = '\0';
	return buf[0] ? buf : "kube-system";
}

/* hostname + "_" + a random (version 4) UUID, as kube-controller-manager. */
static const char *
default_identity(void)
{
	static char id[LEASE_ID_MAX + 1];
	unsigned char u[16];
	char host[256];
	size_t got = 0;
	ssize_t r;

	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	while (got < sizeof u) {
		r = getrandom(u + got, sizeof u - got, 0);
		if (r < 0 && errno != EINTR)
			rs_fatal(111, "unable to get random bytes: %s",
			    strerror(errno));
		if (r > 0)
			got += r;
	}
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(id, sizeof id, "%.200s_%02x%02x%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x-%02x%02x%02x%02x%02x%02x", host, u[0], u[1], u[2], u[3],
	    u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
	    u[14], u[15]);
	return id;
}

static void
check_names(struct flags *f)
{
	if (f->so.eo.ns == NULL)
		f->so.eo.ns = default_ns();
	if (!dns_ok(f->so.eo.ns, 63, 0))
		rs_flag_fail("invalid namespace '%s'", f->so.eo.ns);
	if (!dns_ok(f->so.eo.name, 253, 1))
		rs_flag_fail("invalid lease name '%s'", f->so.eo.name);
	/* A group's name is a label's value too. */
	if ((f->so.nbuckets > 0 || f->list) && strlen(f->so.eo.name) > 63)
		rs_flag_fail("a shard group's name has at most 63 bytes: '%s'",
		    f->so.eo.name);
	if (f->so.eo.identity == NULL)
		f->so.eo.identity = default_identity();
	if (f->so.eo.identity[0] == '\0' || strlen(f->so.eo.identity) > LEASE_ID_MAX)
		rs_flag_fail("%s must be 1 to 253 bytes", "--identity");
}

/* TERM, INT and CHLD are read from a signalfd; blocked before the API
 * client may start a thread, so that every thread has them blocked. */
static int
signals(sigset_t *orig)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, orig) != 0 ||
	    (fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		rs_fatal(111, "unable to set up signals: %s", strerror(errno));
	return fd;
}

int
main(int argc, char **argv)
{
	struct flags f = {
		.so.eo = { .lease_duration = 15000000000LL,
		    .renew_deadline = 10000000000LL,
		    .retry_period = 2000000000LL,
		    .kill_after = 3000000000LL },
	};
	struct rs_kube_opts kopts = { .qps = 5, .burst = 10,
	    .user_agent = "rs-lease/0.1" };
	struct rs_kube_config *cfg;
	struct rs_kube *k;
	sigset_t orig;
	rs_code rc;
	int sigfd, code;

	run_note_fds();
	rs_log_init(argv[0]);
	rs_flag_set_usage(USAGE);
	parse_flags(argc, argv, &f);
	check_timing(&f.so.eo, f.so.fence != NULL);
	check_names(&f);
	srand48(rs_mono_ns() ^ ((long)getpid() << 16));
	/* A request never outlives the renew deadline. */
	kopts.timeout_ms = f.so.eo.renew_deadline / 1000000;
	/* A round writes every held bucket at once: the token bucket must
	 * not hold a renewal back past its deadline. */
	if (f.so.nbuckets > 0) {
		kopts.burst = (int)f.so.nbuckets + 16;
		kopts.qps = 4.0 * kopts.burst * 1e9 /
		    (double)f.so.eo.retry_period;
	}

	sigfd = signals(&orig);
	if ((rc = rs_kube_config_load(&f.cf.ko, &cfg)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to load the API configuration: %s",
		    rs_strerror(rc));
	if ((rc = rs_kube_new(cfg, &kopts, &k)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to set up the API client: %s",
		    rs_strerror(rc));
	if (f.list)
		code = shard_list(k, &f.so);
	else if (f.so.nbuckets > 0)
		code = shard_run(k, &f.so, argv + optind, sigfd, &orig);
	else
		code = elect_run(k, &f.so.eo, argv + optind, sigfd, &orig);
	rs_kube_free(k);
	return code;
}
