/* Unit tests for kubeconfig loading: files written to a temporary
 * directory, the environment set per test, stderr captured to check that
 * errors say what is wrong. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubeconfig.h"
#include "kubeconfig_yaml.h"
#include "log.h"

static char tmpdir[64];
static char errbuf[8192];
static int saved_stderr = -1;

static void
write_file(const char *name, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	FILE *fp;

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fclose(fp);
}

static char *
tpath(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir, name);
	return buf[i];
}

/* stderr goes to a file between capture_start and capture_end, whose text
 * is left in errbuf. */
static void
capture_start(void)
{
	int fd = open(tpath("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

static void
capture_end(void)
{
	ssize_t n;
	int fd;

	dup2(saved_stderr, 2);
	close(saved_stderr);
	fd = open(tpath("stderr"), O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, errbuf, sizeof errbuf - 1);
	close(fd);
	errbuf[n > 0 ? n : 0] = '\0';
}

static rs_code
load(const char *kubeconfig, const char *context, const char *master,
    struct rs_kube_config **c)
{
	struct rs_kube_config_opts o = { kubeconfig, context, master };
	rs_code rc;

	capture_start();
	rc = rs_kube_config_load(&o, c);
	capture_end();
	return rc;
}

static int
setup(void **state)
{
	strcpy(tmpdir, "/tmp/rs-kubeconfig-test.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	/* Nothing of the machine's own configuration may leak in. */
	setenv("HOME", tmpdir, 1);
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	unsetenv("POD_NAMESPACE");
	setenv("RS_SERVICEACCOUNT_DIR", tpath("no-sa"), 1);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static const char two_contexts[] =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: b\n"
    "clusters:\n"
    "- name: ca\n"
    "  cluster:\n"
    "    server: https://a.example:6443/\n"
    "    insecure-skip-tls-verify: true\n"
    "- name: cb\n"
    "  cluster:\n"
    "    server: https://b.example:6443\n"
    "    tls-server-name: kubernetes.default\n"
    "    proxy-url: http://proxy:3128\n"
    "contexts:\n"
    "- name: a\n"
    "  context: {cluster: ca, user: ua}\n"
    "- name: b\n"
    "  context:\n"
    "    cluster: cb\n"
    "    user: ub\n"
    "    namespace: team-b\n"
    "users:\n"
    "- name: ua\n"
    "  user:\n"
    "    username: alice\n"
    "    password: secret\n"
    "- name: ub\n"
    "  user:\n"
    "    token: tok-b\n";

static void
test_current_context(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("config", "%s", two_contexts);
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_OK);
	assert_string_equal(c->context, "b");
	assert_string_equal(c->server, "https://b.example:6443");
	assert_string_equal(c->namespace, "team-b");
	assert_string_equal(c->token, "tok-b");
	assert_string_equal(c->tls_server_name, "kubernetes.default");
	assert_string_equal(c->proxy_url, "http://proxy:3128");
	assert_int_equal(c->insecure, 0);
	assert_null(c->username);
	rs_kube_config_free(c);
}

static void
test_explicit_context(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("config", "%s", two_contexts);
	assert_int_equal(load(tpath("config"), "a", NULL, &c), RS_OK);
	assert_string_equal(c->context, "a");
	/* The trailing slash is dropped: paths are appended to it. */
	assert_string_equal(c->server, "https://a.example:6443");
	assert_int_equal(c->insecure, 1);
	assert_string_equal(c->username, "alice");
	assert_string_equal(c->password, "secret");
	assert_null(c->token);
	assert_null(c->namespace);
	rs_kube_config_free(c);

	assert_int_equal(load(tpath("config"), "nope", NULL, &c),
	    RS_ECONFIG);
	assert_null(c);
	assert_non_null(strstr(errbuf, "context \"nope\" not found"));
}

static void
test_master_overrides(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("config", "%s", two_contexts);
	assert_int_equal(load(tpath("config"), NULL, "https://other:1234",
	    &c), RS_OK);
	assert_string_equal(c->server, "https://other:1234");
	assert_string_equal(c->token, "tok-b");
	rs_kube_config_free(c);

	/* --master alone needs no kubeconfig at all. */
	assert_int_equal(load(NULL, NULL, "other:1234", &c), RS_OK);
	assert_string_equal(c->server, "https://other:1234");
	assert_null(c->token);
	rs_kube_config_free(c);
}

static void
test_data_fields(void **state)
{
	struct rs_kube_config *c = NULL;

	/* "-----BEGIN CA-----\n", "CERT\x00\xff", "KEY!" */
	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1',\n"
	    "  certificate-authority-data: LS0tLS1CRUdJTiBDQS0tLS0tCg==,\n"
	    "  certificate-authority: /ignored/when/data/is/set}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "users:\n"
	    "- name: u\n"
	    "  user:\n"
	    "    client-certificate-data: |\n"
	    "      Q0VS\n"
	    "      VAD/\n"
	    "    client-key-data: S0VZIQ\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_OK);
	assert_int_equal(c->ca_data_len, 19);
	assert_memory_equal(c->ca_data, "-----BEGIN CA-----\n", 19);
	assert_null(c->ca_file);
	assert_int_equal(c->cert_data_len, 6);
	assert_memory_equal(c->cert_data, "CERT\x00\xff", 6);
	assert_int_equal(c->key_data_len, 4);
	assert_memory_equal(c->key_data, "KEY!", 4);
	rs_kube_config_free(c);

	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1',\n"
	    "  certificate-authority-data: 'not*base64'}}]\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "certificate-authority-data is not "
	    "valid base64"));
}

static void
test_relative_paths(void **state)
{
	struct rs_kube_config *c = NULL;
	char want[512];

	assert_int_equal(mkdir(tpath("sub"), 0700), 0);
	assert_int_equal(mkdir(tpath("sub/pki"), 0700), 0);
	write_file("sub/pki/ca.crt", "ca");
	write_file("sub/pki/c.crt", "cert");
	write_file("sub/pki/c.key", "key");
	write_file("sub/token", "t0k\n");
	write_file("sub/config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1',\n"
	    "  certificate-authority: pki/ca.crt}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}},\n"
	    "  {name: y, context: {cluster: c, user: v}}]\n"
	    "users:\n"
	    "- name: u\n"
	    "  user: {client-certificate: pki/c.crt, client-key: "
	    "./pki/c.key}\n"
	    "- name: v\n"
	    "  user:\n"
	    "    tokenFile: token\n"
	    "    exec:\n"
	    "      apiVersion: client.authentication.k8s.io/v1\n"
	    "      command: bin/plugin\n"
	    "      args: [get-token, --verbose]\n"
	    "      env: [{name: A, value: '1'}, {name: B, value: two}]\n"
	    "      provideClusterInfo: true\n"
	    "      interactiveMode: Never\n");
	assert_int_equal(load(tpath("sub/config"), NULL, NULL, &c), RS_OK);
	snprintf(want, sizeof want, "%s/sub/pki/ca.crt", tmpdir);
	assert_string_equal(c->ca_file, want);
	snprintf(want, sizeof want, "%s/sub/pki/c.crt", tmpdir);
	assert_string_equal(c->cert_file, want);
	snprintf(want, sizeof want, "%s/sub/./pki/c.key", tmpdir);
	assert_string_equal(c->key_file, want);
	rs_kube_config_free(c);

	/* Relative to the file, not to the working directory. */
	assert_int_equal(chdir("/"), 0);
	assert_int_equal(load(tpath("sub/config"), "y", NULL, &c), RS_OK);
	snprintf(want, sizeof want, "%s/sub/token", tmpdir);
	assert_string_equal(c->token_file, want);
	assert_non_null(c->exec);
	snprintf(want, sizeof want, "%s/sub/bin/plugin", tmpdir);
	assert_string_equal(c->exec->command, want);
	assert_string_equal(c->exec->api_version,
	    "client.authentication.k8s.io/v1");
	assert_string_equal(c->exec->args[0], "get-token");
	assert_string_equal(c->exec->args[1], "--verbose");
	assert_null(c->exec->args[2]);
	assert_string_equal(c->exec->env[0], "A=1");
	assert_string_equal(c->exec->env[1], "B=two");
	assert_null(c->exec->env[2]);
	assert_int_equal(c->exec->provide_cluster_info, 1);
	assert_string_equal(c->exec->interactive_mode, "Never");
	rs_kube_config_free(c);

	/* A missing referenced file is named. */
	assert_int_equal(unlink(tpath("sub/pki/c.key")), 0);
	assert_int_equal(load(tpath("sub/config"), NULL, NULL, &c),
	    RS_ECONFIG);
	assert_non_null(strstr(errbuf, "c.key"));
	assert_non_null(strstr(errbuf, "client-key"));
}

static void
test_exec_bare_command(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "users: [{name: u, user: {exec: {apiVersion: "
	    "client.authentication.k8s.io/v1beta1, command: aws-iam}}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_OK);
	/* Found on PATH at run time, not made relative to the file. */
	assert_string_equal(c->exec->command, "aws-iam");
	assert_null(c->exec->args[0]);
	assert_int_equal(c->exec->provide_cluster_info, 0);
	rs_kube_config_free(c);

	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "users: [{name: u, user: {exec: {apiVersion: "
	    "client.authentication.k8s.io/v1alpha1, command: x}}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "invalid apiVersion"));
}

static void
test_merged_list(void **state)
{
	struct rs_kube_config *c = NULL;
	char env[1024];

	write_file("one",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://first:1'}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n");
	write_file("two",
	    "current-context: y\n"
	    "clusters: [{name: c, cluster: {server: 'https://second:2'}},\n"
	    "  {name: d, cluster: {server: 'https://d:4'}}]\n"
	    "contexts: [{name: x, context: {cluster: d}},\n"
	    "  {name: y, context: {cluster: d, user: u}}]\n"
	    "users: [{name: u, user: {token: from-two}}]\n");
	snprintf(env, sizeof env, "%s:%s", tpath("one"), tpath("two"));
	setenv("KUBECONFIG", env, 1);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_OK);
	/* First current-context and first stanza of each name win; a name
	 * the first file lacks comes from the second. */
	assert_string_equal(c->context, "x");
	assert_string_equal(c->server, "https://first:1");
	assert_string_equal(c->token, "from-two");
	rs_kube_config_free(c);

	assert_int_equal(load(NULL, "y", NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://d:4");
	rs_kube_config_free(c);

	/* The other order: the second file's answers now win. */
	snprintf(env, sizeof env, "%s:%s", tpath("two"), tpath("one"));
	setenv("KUBECONFIG", env, 1);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_OK);
	assert_string_equal(c->context, "y");
	assert_string_equal(c->server, "https://d:4");
	rs_kube_config_free(c);
	assert_int_equal(load(NULL, "x", NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://d:4");
	assert_null(c->token);
	rs_kube_config_free(c);
	unsetenv("KUBECONFIG");
}

static void
test_missing_in_list_skipped(void **state)
{
	struct rs_kube_config *c = NULL;
	char env[1024];

	write_file("good", "%s", two_contexts);
	snprintf(env, sizeof env, "%s::%s", tpath("absent"), tpath("good"));
	setenv("KUBECONFIG", env, 1);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://b.example:6443");
	assert_non_null(strstr(c->source, "good"));
	assert_null(strstr(c->source, "absent"));
	rs_kube_config_free(c);
	unsetenv("KUBECONFIG");
}

static void
test_missing_explicit(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("good", "%s", two_contexts);
	/* KUBECONFIG would work, but an explicit file takes its place. */
	setenv("KUBECONFIG", tpath("good"), 1);
	assert_int_equal(load(tpath("absent"), NULL, NULL, &c), RS_ECONFIG);
	assert_null(c);
	assert_non_null(strstr(errbuf, tpath("absent")));
	assert_non_null(strstr(errbuf, "no such file"));
	unsetenv("KUBECONFIG");
}

static void
test_home_config(void **state)
{
	struct rs_kube_config *c = NULL;

	assert_int_equal(load(NULL, NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "no configuration"));
	assert_int_equal(mkdir(tpath(".kube"), 0700), 0);
	write_file(".kube/config", "%s", two_contexts);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_OK);
	assert_string_equal(c->context, "b");
	rs_kube_config_free(c);
}

static void
test_in_cluster(void **state)
{
	struct rs_kube_config *c = NULL;

	assert_int_equal(mkdir(tpath("sa"), 0700), 0);
	write_file("sa/token", "sa-token\n");
	write_file("sa/ca.crt", "ca");
	write_file("sa/namespace", "kube-system");
	setenv("RS_SERVICEACCOUNT_DIR", tpath("sa"), 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://10.96.0.1:443");
	assert_string_equal(c->token_file, tpath("sa/token"));
	assert_string_equal(c->ca_file, tpath("sa/ca.crt"));
	assert_string_equal(c->namespace, "kube-system");
	assert_null(c->context);
	rs_kube_config_free(c);

	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("POD_NAMESPACE", "mine", 1);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://[fd00::1]:443");
	assert_string_equal(c->namespace, "mine");
	rs_kube_config_free(c);
	unsetenv("POD_NAMESPACE");

	/* A kubeconfig with a context wins over in-cluster. */
	write_file("config", "%s", two_contexts);
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://b.example:6443");
	rs_kube_config_free(c);

	/* No token: not in a cluster. */
	assert_int_equal(unlink(tpath("sa/token")), 0);
	assert_int_equal(load(NULL, NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "not in a cluster"));
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

static void
test_absent_cluster(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
	    "contexts: [{name: x, context: {cluster: elsewhere}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_null(c);
	assert_non_null(strstr(errbuf, "cluster \"elsewhere\""));
	assert_non_null(strstr(errbuf, "not defined"));

	write_file("config",
	    "current-context: gone\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "current-context \"gone\""));

	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {insecure-skip-tls-verify: true}}]\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "cluster \"c\" has no server"));
}

static void
test_garbage(void **state)
{
	static const char *const bad[] = {
		"clusters: [unclosed\n",
		"a: b\n  c: d: e\n- x\n",
		"\x01\x02\xff\xfe garbage \x80",
		"- just\n- a\n- list\n",
		"\"a scalar\"\n",
		"key: \"unterminated\n",
		"a: &a [*a, *a]\n",
	};
	struct rs_kube_config *c = NULL;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_file("config", "%s", bad[i]);
		assert_int_equal(load(tpath("config"), NULL, NULL, &c),
		    RS_ECONFIG);
		assert_null(c);
		assert_non_null(strstr(errbuf, tpath("config")));
	}
	write_file("config", "clusters: [unclosed\n");
	load(tpath("config"), NULL, NULL, &c);
	assert_non_null(strstr(errbuf, "not valid YAML: line"));
}

static void
test_json_kubeconfig(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("config.json",
	    "{\"apiVersion\":\"v1\",\"current-context\":\"j\","
	    "\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":"
	    "\"https://json:9\",\"insecure-skip-tls-verify\":true}}],"
	    "\"contexts\":[{\"name\":\"j\",\"context\":{\"cluster\":\"c\","
	    "\"user\":\"u\",\"namespace\":\"ns\"}}],"
	    "\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"jt\"}}]}\n");
	assert_int_equal(load(tpath("config.json"), NULL, NULL, &c), RS_OK);
	assert_string_equal(c->server, "https://json:9");
	assert_int_equal(c->insecure, 1);
	assert_string_equal(c->namespace, "ns");
	assert_string_equal(c->token, "jt");
	rs_kube_config_free(c);
}

static void
test_auth_conflicts(void **state)
{
	struct rs_kube_config *c = NULL;

	write_file("ca", "x");
	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1',\n"
	    "  insecure-skip-tls-verify: true, certificate-authority: ca}}]\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "insecure-skip-tls-verify"));

	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "users: [{name: u, user: {client-certificate-data: QQ==}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_ECONFIG);
	assert_non_null(strstr(errbuf, "both"));

	/* A user named but not defined: no credentials, and a warning. */
	write_file("config",
	    "current-context: x\n"
	    "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
	    "contexts: [{name: x, context: {cluster: c, user: ghost}}]\n");
	assert_int_equal(load(tpath("config"), NULL, NULL, &c), RS_OK);
	assert_null(c->token);
	assert_non_null(strstr(errbuf, "user \"ghost\""));
	rs_kube_config_free(c);
}

static void
test_base64(void **state)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob",
	    "fooba", "foobar" };
	static const char *const enc[] = { "", "Zg==", "Zm8=", "Zm9v",
	    "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	char *out, *e;
	size_t i, len;

	for (i = 0; i < sizeof plain / sizeof plain[0]; i++) {
		e = rs_base64_encode(plain[i], strlen(plain[i]));
		assert_string_equal(e, enc[i]);
		free(e);
		assert_int_equal(rs_base64_decode(enc[i], strlen(enc[i]),
		    &out, &len), RS_OK);
		assert_int_equal(len, strlen(plain[i]));
		assert_memory_equal(out, plain[i], len);
		free(out);
	}
	assert_int_equal(rs_base64_decode("Zm9vYg", 6, &out, &len), RS_OK);
	assert_string_equal(out, "foob");
	free(out);
	assert_int_equal(rs_base64_decode("Zm9v\nYmFy\n", 10, &out, &len),
	    RS_OK);
	assert_string_equal(out, "foobar");
	free(out);
	assert_int_equal(rs_base64_decode("Zm9v!", 5, &out, &len),
	    RS_EPARSE);
	assert_int_equal(rs_base64_decode("Zg==Zg", 6, &out, &len),
	    RS_EPARSE);
	assert_int_equal(rs_base64_decode("Z", 1, &out, &len), RS_EPARSE);
}

static void
test_yaml_bounds(void **state)
{
	/* Nine levels of ten-fold aliases would be 10^9 nodes. */
	static const char bomb[] =
	    "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
	    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	static const char ok[] = "a: [1, {b: ~}, '']\nc:\n";
	char err[256];
	cJSON *o = NULL;

	assert_int_equal(rs_yaml_to_json(bomb, sizeof bomb - 1, &o, err,
	    sizeof err), RS_EPARSE);
	assert_null(o);
	assert_non_null(strstr(err, "too many nodes"));

	assert_int_equal(rs_yaml_to_json(ok, sizeof ok - 1, &o, err,
	    sizeof err), RS_OK);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "c")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(o, "a"), 1), "b")));
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "a"),
	    2)->valuestring, "");
	cJSON_Delete(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_current_context, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_explicit_context, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_master_overrides, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_data_fields, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_relative_paths, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_exec_bare_command, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_merged_list, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_missing_in_list_skipped,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_explicit, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_home_config, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_in_cluster, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_absent_cluster, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_kubeconfig, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_auth_conflicts, setup,
		    teardown),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_yaml_bounds),
	};

	rs_log_init("kubeconfig-test");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
