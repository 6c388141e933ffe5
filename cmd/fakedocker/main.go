// Command fakedocker runs fake Docker daemons (package test/fakedocker) for
// scale benchmarks: managers in other processes take one as their Docker host.
// Every host pulls any image, has every network (unless --networks), answers
// the engines' probes and rotations at once, and counts duplicate creates.
//
//	fakedocker --hosts 50 --dir /tmp/fakehosts --stats 127.0.0.1:7070
//	curl -s 127.0.0.1:7070/stats                  # creates, duplicates, requests
//	curl -s '127.0.0.1:7070/observed?since=2026-01-02T15:04:05Z'   # containers looked at since
//	curl -s '127.0.0.1:7070/live?namespace=team-a'  # live service containers of one namespace
//	curl -s -X POST 127.0.0.1:7070/hosts/3/restart
//	fakedocker --socket /tmp/fake.sock            # one host
//
// It prints one line per host, "<i> <address>", then serves until interrupted,
// and prints the statistics' sums as JSON on its way out.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

type config struct {
	socket, tcp, dir, stats, networks string
	hosts, cpus                       int
}

func main() {
	var c config
	flag.StringVar(&c.socket, "socket", "", "serve one host on this unix socket")
	flag.StringVar(&c.tcp, "tcp", "", "serve one host on this TCP address, e.g. 127.0.0.1:2375")
	flag.IntVar(&c.hosts, "hosts", 0, "serve this many hosts, each on its own socket in --dir")
	flag.StringVar(&c.dir, "dir", "", "the directory of --hosts' sockets (host-000.sock, ...)")
	flag.StringVar(&c.stats, "stats", "", "serve GET /stats, GET /observed?since=, GET /live?namespace= and POST /hosts/{i}/down|up|restart|stall|resume on this TCP address or socket path")
	flag.IntVar(&c.cpus, "cpus", 4, "each host's CPU count")
	flag.StringVar(&c.networks, "networks", "", "comma-separated networks each host has besides bridge (default: every network exists)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "fakedocker:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	hosts, err := start(c)
	if err != nil {
		return err
	}
	defer hosts.Close()
	for i, s := range hosts {
		fmt.Printf("%d %s\n", i, s.Host())
	}
	if c.stats != "" {
		network := "tcp"
		if strings.Contains(c.stats, "/") {
			network = "unix"
			_ = os.Remove(c.stats)
		}
		ln, err := net.Listen(network, c.stats)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: hosts.Control(), ReadHeaderTimeout: time.Minute}
		go func() { _ = srv.Serve(ln) }()
		defer func() { _ = srv.Close() }()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	sum := hosts.Summary()
	sum.Hosts = nil
	return json.NewEncoder(os.Stdout).Encode(sum)
}

// start starts the hosts the flags ask for.
func start(c config) (fakedocker.Hosts, error) {
	opts := []fakedocker.Option{fakedocker.WithCPUs(c.cpus), fakedocker.WithPullAny(),
		fakedocker.WithExecHook(fakedocker.EngineAnswers)}
	if c.networks == "" {
		opts = append(opts, fakedocker.WithAnyNetwork())
	} else {
		opts = append(opts, fakedocker.WithNetworks(strings.Split(c.networks, ",")...))
	}
	switch {
	case c.hosts > 0 && c.dir != "":
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return nil, err
		}
		return fakedocker.StartHosts(c.dir, c.hosts, opts...)
	case c.socket != "" || c.tcp != "":
		network, addr := "unix", c.socket
		if c.tcp != "" {
			network, addr = "tcp", c.tcp
		}
		s := fakedocker.New(opts...)
		return fakedocker.Hosts{s}, s.Listen(network, addr)
	}
	return nil, errors.New("want --socket, --tcp, or --hosts with --dir")
}
