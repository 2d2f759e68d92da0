package sshserve

import (
	"net"
	"time"
)

// preauthCount counts the connections that have not authenticated yet, in all
// and per source, and the refusals not yet logged.
type preauthCount struct {
	total    int
	bySource map[string]int
	refused  int       // refusals since the last line logged
	loggedAt time.Time // when the last refusal was logged
}

// enter counts c unless that would pass maxTotal (in all) or maxPerSource (0:
// no bound); it returns which bound refused it.
func (p *preauthCount) enter(c *connState, maxTotal, maxPerSource int) (limit string, over bool) {
	switch {
	case maxTotal > 0 && p.total >= maxTotal:
		return "max_unauthenticated", true
	case maxPerSource > 0 && p.bySource[c.source] >= maxPerSource:
		return "max_unauthenticated_per_source", true
	}
	p.total++
	p.bySource[c.source]++
	c.counted = true
	return "", false
}

// leave stops counting c (once: when it authenticates or closes).
func (p *preauthCount) leave(c *connState) {
	if !c.counted {
		return
	}
	c.counted = false
	p.total--
	if p.bySource[c.source]--; p.bySource[c.source] <= 0 {
		delete(p.bySource, c.source)
	}
}

// refused logs a refused connection: the first of a burst at once, then at most
// a line a second, which counts the refusals since the last.
func (s *Server) refused(remote, limit string) {
	s.mu.Lock()
	s.preauth.refused++
	n := s.preauth.refused
	log := time.Since(s.preauth.loggedAt) >= time.Second
	if log {
		s.preauth.refused, s.preauth.loggedAt = 0, time.Now()
	}
	s.mu.Unlock()
	if log {
		s.log.Warn("refused a connection: too many unauthenticated connections", "remote", remote, "limit", limit,
			"max", s.cfg.MaxUnauthenticated, "max_per_source", s.cfg.MaxUnauthenticatedPerSource, "refused", n)
	}
}

// sourceOf is where a connection comes from, as the per-source bound counts it:
// an IPv4 address, or the /64 of an IPv6 address (a single host commonly holds
// a whole /64).
func sourceOf(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if v4 := tcp.IP.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: tcp.IP.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}
