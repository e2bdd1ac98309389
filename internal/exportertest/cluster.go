package exportertest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// StartNATSCluster starts a JetStream cluster of n nats-servers on loopback
// ports and returns once every one of them answers JetStream requests (a
// meta leader was elected). Stop each server when done.
func StartNATSCluster(n int) ([]*NATSServer, error) {
	if n < 1 {
		return nil, errors.New("exportertest: a cluster needs at least one server")
	}
	clientPorts := make([]int, n)
	routePorts := make([]int, n)
	for i := range n {
		var err error
		if clientPorts[i], err = FreePort(); err != nil {
			return nil, err
		}
		if routePorts[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	routes := make([]string, n)
	for i, p := range routePorts {
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(p)
	}
	type started struct {
		i   int
		s   *NATSServer
		err error
	}
	// The servers become ready together, once a quorum has formed, so they
	// start concurrently.
	ch := make(chan started, n)
	for i := range n {
		go func() {
			s, err := StartNATS(NATSOptions{
				Port: clientPorts[i],
				Args: []string{
					"--server_name", fmt.Sprintf("n%d", i+1),
					"--cluster_name", "jetlake",
					"--cluster", routes[i],
					"--routes", strings.Join(routes, ","),
				},
			})
			ch <- started{i, s, err}
		}()
	}
	servers := make([]*NATSServer, n)
	var errs []error
	for range n {
		r := <-ch
		servers[r.i] = r.s
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if len(errs) > 0 {
		for _, s := range servers {
			if s != nil {
				s.Stop()
			}
		}
		return nil, errors.Join(errs...)
	}
	return servers, nil
}

// ClusterURL returns the servers' URLs, comma-separated, as a connector's
// [nats] url takes them.
func ClusterURL(servers []*NATSServer) string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL
	}
	return strings.Join(urls, ",")
}
