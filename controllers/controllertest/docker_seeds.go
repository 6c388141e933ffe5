package controllertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// WithPostgres adds the local postgres test image to real options.
func WithPostgres(o Options) Options {
	img, err := testenv.EngineImages()
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(1, img.Plain["postgres"]).NotTo(gomega.BeEmpty(), "hack/images.sh --print names no POSTGRES_IMAGE")
	o.Images["postgres"] = engine.Images{Default: img.Plain["postgres"]}
	return o
}

// SeedConfigMap makes the ConfigMap name of init scripts in ns.
func SeedConfigMap(ns, name string, scripts map[string]string) {
	gomega.ExpectWithOffset(1, k8sClient.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: scripts})).To(gomega.Succeed())
}

// SleepScripts are n scripts of one pg_sleep(secs) each: the script of the
// i-th (from 1) is key SleepScript(i).
func SleepScripts(n, secs int) map[string]string {
	out := map[string]string{}
	for i := 1; i <= n; i++ {
		out[SleepScript(i)] = fmt.Sprintf("SELECT pg_sleep(%d);", secs)
	}
	return out
}

// SleepScript is the key of the i-th of SleepScripts: 010-sleep.sql, 020-sleep.sql…
// (three digits: the scripts run in the keys' lexical order).
func SleepScript(i int) string { return fmt.Sprintf("%03d-sleep.sql", 10*i) }

// ContainerOf is the container ID a Sandbox's status gives its first service
// ("" before it has one).
func ContainerOf(sb *sandboxv1.Sandbox) string {
	got := &sandboxv1.Sandbox{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), got); err != nil || len(got.Status.Services) == 0 {
		return ""
	}
	return got.Status.Services[0].ContainerID
}

// Psql runs sql in the Sandbox's postgres container, as its user with the
// password of its Secret, and returns psql's unaligned output.
func Psql(driver dd.Driver, sb *sandboxv1.Sandbox, sql string) (string, error) {
	s := &corev1.Secret{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Name + "-sandbox"}, s); err != nil {
		return "", err
	}
	id := ContainerOf(sb)
	if id == "" {
		return "", fmt.Errorf("%s has no container yet", sb.Name)
	}
	r, err := driver.Exec(ctx, id, dd.ExecSpec{
		Cmd: []string{"psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
			"-U", string(s.Data[sandboxv1.PostgresUserKey]), "-d", string(s.Data[sandboxv1.PostgresDatabaseKey]), "-c", sql},
		Env: map[string]string{"PGPASSWORD": string(s.Data[sandboxv1.PostgresPasswordKey]), "PGCONNECT_TIMEOUT": "3"},
	})
	if err != nil {
		return "", err
	}
	if r.ExitCode != 0 {
		return "", fmt.Errorf("psql: exit %d: %s", r.ExitCode, strings.TrimSpace(r.Stderr))
	}
	return strings.TrimSpace(r.Stdout), nil
}

// SleepingBackends counts the postgres backends of the Sandbox that run
// pg_sleep (a seed's script), -1 when postgres cannot be asked.
func SleepingBackends(driver dd.Driver, sb *sandboxv1.Sandbox) func() int {
	return func() int {
		out, err := Psql(driver, sb, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(%' AND pid <> pg_backend_pid()")
		if err != nil {
			return -1
		}
		var n int
		if _, err := fmt.Sscan(out, &n); err != nil {
			return -1
		}
		return n
	}
}

// HostProcesses lists the command lines of the processes, seen from this
// host's /proc, in the container id's cgroup: whatever of the container still
// runs, execs included. It needs the Docker engine on this host (the suites'
// local engine), in the same PID namespace.
func HostProcesses(id string) []string {
	var out []string
	cgroups, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, f := range cgroups {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), id) {
			continue // ended meanwhile, or not the container's
		}
		cmd, err := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		if err != nil {
			continue
		}
		out = append(out, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return out
}

// HostProcessesMatching is HostProcesses of id whose command line contains s.
func HostProcessesMatching(id, s string) func() []string {
	return func() []string {
		var out []string
		for _, p := range HostProcesses(id) {
			if strings.Contains(p, s) {
				out = append(out, p)
			}
		}
		return out
	}
}
