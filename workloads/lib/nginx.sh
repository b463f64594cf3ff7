# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# nginx: a private nginx on 127.0.0.1, an instance of the server form
# (server.sh); sourced by sweep.sh.  A master process and one worker, both
# in the work cgroup on the server's CPU; its configuration, page, pid
# file, logs and temporary folders in its own folder (SRV_DIR), written
# here, so that nothing of a system nginx's configuration is read.  Its
# load generator and knee are httperf's (httperf.sh), as Apache's.  Its
# measures:
#   reply       reqtime's GET of a small static page, one connection each
#               (Apache's reference)
#   saturation  httperf's knee: kept up with while the replies follow 95 %
#               of the offered rate (99.5 % on the virtual clock), within
#               5 % (0.5 %); HTTPERF_KEEPUP and HTTPERF_REFINE set others
#   server      the replies of the steps kept up with over nginx's CPU time
# shellcheck source=workloads/lib/server.sh
. "$SWEEP_DIR/lib/server.sh"
# shellcheck source=workloads/lib/httperf.sh
. "$SWEEP_DIR/lib/httperf.sh"

# On the virtual clock a reply was 63.8 us and 8 delayed calls (d½ 8.0 us,
# 2,640 loops), each reply the same 8: 8000 loops (24 us) is 3.0 d½, the
# points 0.38 d½ apart.
WL_ABOUT="a private nginx (master and one worker): reply time, then httperf's saturation search"
WL_LOOPS=0:8000:1000
WL_REPEATS=3
WL_POINT_SECONDS=30
WL_STAGE=guest
WL_REPEATS_VIRTUAL=2
WL_SERVER=1
WL_PACKAGES="nginx-light httperf"
# A point gets cheaper as its delay grows, as Apache's (its knee's steps
# fewer): the cost lablib.sweep.parts.balance deals parts by.
WL_COST_SLOPE=-0.4
wl_describe() { echo ", saturation steps of $STEP_SECONDS s, $(server_requests) replies a reference"; }
NGINX_PORT=${NGINX_PORT:-18081}
server_is nginx "$NGINX_PORT" nginx.pid httperf
HTTPERF_PORT=$NGINX_PORT
NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}

srv_check() {
	[ -x "$NGINX_BIN" ] || die "no nginx at $NGINX_BIN (install nginx-light: 'make deps')"
	httperf_check
}

srv_settings() {
	printf '%s\n' "nginx=$NGINX_BIN" "worker_processes=1"
	httperf_settings
}

# The configuration and the page.  daemon is not in the file: the command
# line sets it (on for the sweep's server, off for staging's).
srv_prepare() {
	httperf_docroot <<'EOF'
<!DOCTYPE html>
<html>
<head><title>kernel-lab</title></head>
<body>
<p>A small static page, the one every reference request of the nginx
workload fetches (workloads/lib/nginx.sh).</p>
</body>
</html>
EOF
	cat >"$SRV_DIR/nginx.conf" <<EOF
# The lab's nginx for workloads/sweep.sh nginx (lib/nginx.sh writes it):
# loopback only, one small static page, every file in this folder.  The
# master, started as root, and one worker (as $HTTP_USER), which serves every
# connection; daemon is given on the command line.
master_process on;
worker_processes 1;
user $HTTP_USER $HTTP_GROUP;
pid $SRV_DIR/$SRV_PIDFILE;
lock_file $SRV_DIR/nginx.lock;
error_log $SRV_DIR/error.log warn;

events {
	worker_connections 768;
}

http {
	types {
		text/html html;
	}
	default_type text/plain;
	# Each request is logged, as a default installation does.
	access_log $SRV_DIR/access.log combined;
	client_body_temp_path $SRV_DIR/client_body;
	proxy_temp_path $SRV_DIR/proxy;
	fastcgi_temp_path $SRV_DIR/fastcgi;
	uwsgi_temp_path $SRV_DIR/uwsgi;
	scgi_temp_path $SRV_DIR/scgi;

	server {
		listen 127.0.0.1:$NGINX_PORT;
		server_name localhost;
		root $SRV_DIR/htdocs;
		index index.html;
	}
}
EOF
	cp "$SRV_DIR/nginx.conf" "$LAB_DIR/nginx.conf"
}

srv_setup() {
	log "$("$NGINX_BIN" -v 2>&1)"
	httperf_setup
}

# nginx_cmd DAEMON: NGINX_CMD, nginx with its folder as prefix, its
# configuration and its error log from the start, daemon on or off.
nginx_cmd() {
	NGINX_CMD=("$NGINX_BIN" -p "$SRV_DIR/" -c "$SRV_DIR/nginx.conf" -e "$SRV_DIR/error.log"
		-g "daemon $1;")
}

# Fresh, with an empty access log.  The master forks itself away and
# writes its pid file; the worker is its child.
srv_start() {
	rm -f "$SRV_DIR/access.log"
	nginx_cmd on
	"$@" "${NGINX_CMD[@]}"
}

srv_foreground() {
	nginx_cmd off
	SRV_FG=("${NGINX_CMD[@]}")
}

srv_reference() { REFERENCE_ARGS=(127.0.0.1 "$NGINX_PORT" /index.html); }

srv_finish() {
	[ -z "$SRV_DIR" ] || [ ! -f "$SRV_DIR/error.log" ] ||
		cp "$SRV_DIR/error.log" "$LAB_DIR/logs/nginx-error.log" 2>/dev/null || true
}
