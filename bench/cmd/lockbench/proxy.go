package main

import "github.com/volleylock/volley/internal/faultproxy"

// startFaultProxy starts internal/faultproxy in front of target.
func startFaultProxy(target string) (faultProxy, error) {
	return faultproxy.Start(target)
}
