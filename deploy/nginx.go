// Package deploy holds what runs boxoffice in production beside the binary:
// nginx.conf, the load balancer's configuration for two or more instances
// (README.md, "Behind a load balancer"), and NginxConf, which fits it to
// instances on other ports, as the load-balancer test and the load test do.
package deploy

import (
	_ "embed"
	"fmt"
	"strings"
)

// Nginx is deploy/nginx.conf as shipped.
//
//go:embed nginx.conf
var Nginx string

// NginxConf returns Nginx listening on listen (host:port) in front of the
// instances at upstreams (host:port each), with its pid file, error log and
// temporary files in dir (a folder the caller owns), so that it runs with
// `nginx -p dir -c <file> -e dir/error.log -g 'daemon off;'` beside a
// system nginx. asRoot adds `user root;`, for a master process run as root
// whose workers write into dir.
func NginxConf(listen string, upstreams []string, dir string, asRoot bool) (string, error) {
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "        server %s max_fails=3 fail_timeout=5s;\n", u)
	}
	text := Nginx
	for _, r := range []struct{ old, repl string }{
		{"        server 127.0.0.1:8081 max_fails=3 fail_timeout=5s;\n        server 127.0.0.1:8082 max_fails=3 fail_timeout=5s;\n", servers.String()},
		{"listen 8080;", "listen " + listen + ";"},
		{"http {\n", fmt.Sprintf("http {\n    client_body_temp_path %[1]s/body;\n    proxy_temp_path %[1]s/proxy;\n"+
			"    fastcgi_temp_path %[1]s/fastcgi;\n    uwsgi_temp_path %[1]s/uwsgi;\n    scgi_temp_path %[1]s/scgi;\n", dir)},
		{"worker_processes auto;", fmt.Sprintf("worker_processes 2;\npid %[1]s/nginx.pid;\nerror_log %[1]s/error.log warn;", dir)},
	} {
		if !strings.Contains(text, r.old) {
			return "", fmt.Errorf("deploy/nginx.conf has no %q to replace", r.old)
		}
		text = strings.Replace(text, r.old, r.repl, 1)
	}
	if asRoot {
		text = "user root;\n" + text
	}
	return text, nil
}
