package cmd

import (
	"net"
)

// sdNotify sends state (such as "READY=1") to systemd's notification socket
// when the relay runs under a Type=notify unit; without NOTIFY_SOCKET it does
// nothing. It is the whole of the sd_notify protocol the relay needs: one datagram
// on a Unix socket, so no library.
func sdNotify(io IO, state string) error {
	addr := io.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	if addr[0] == '@' { // an abstract socket
		addr = "\x00" + addr[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}
