package serverless

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// This file lends the address rules of `call: http` to other outbound HTTP (alert webhooks).

// Client returns an HTTP client that refuses, at dial time, the addresses `call: http` may not
// reach (so a name that resolves to a private address later is refused too). A request whose
// context went through AllowPrivate may reach private addresses.
func (o HTTPOptions) Client() *http.Client { return newHTTPRunner(o).client }

// AllowPrivate returns ctx for a request to host: when o allows host by name, it may reach a
// private address.
func (o HTTPOptions) AllowPrivate(ctx context.Context, host string) context.Context {
	if o.allowedByName(host) {
		return context.WithValue(ctx, allowPrivateKey{}, true)
	}
	return ctx
}

// CheckURL refuses a URL that is not http(s), a host o denies or does not allow, and a host that
// is (or resolves now to) a private, loopback, link-local or reserved address unless allowed by
// name. The dial-time check of Client still applies when the URL is used.
func (o HTTPOptions) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return errors.New("the URL must be an absolute http or https URL")
	}
	host := u.Hostname()
	if err := o.check(host); err != nil {
		return err
	}
	if o.allowedByName(host) {
		return nil
	}
	addrs := []string{host}
	if _, err := netip.ParseAddr(host); err != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if addrs, err = net.DefaultResolver.LookupHost(ctx, host); err != nil {
			return nil // unresolvable now: the dial-time check decides when it is used
		}
	}
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			continue
		}
		if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			return fmt.Errorf("host %s is a private or reserved address (allow it with --http-allow)", host)
		}
	}
	return nil
}
