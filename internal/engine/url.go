package engine

import (
	"net"
	"net/url"
	"strconv"
)

// connectionURL is a service's URL: scheme://user:password@host:port/path?query,
// each part percent-encoded by net/url (an IPv6 host is bracketed). With no
// user, the password alone goes in the userinfo (redis://:pw@...).
func connectionURL(scheme, user, password, host string, port int, path, query string) string {
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: path, RawQuery: query}
	u.User = url.UserPassword(user, password)
	return u.String()
}
