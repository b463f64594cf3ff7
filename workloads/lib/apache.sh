# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# apache: a private Apache httpd on 127.0.0.1, one instance of the server
# form (server.sh); sourced by sweep.sh.  Its load generator and knee are
# httperf's (httperf.sh); its measures:
#   reply       reqtime's GET of a small static page, one connection each
#   saturation  httperf's knee (httperf.sh), within APACHE_REFINE (5 %,
#               0.5 % on the virtual clock) and kept up with while the
#               replies follow APACHE_KEEPUP of the offered rate (95 %,
#               99.5 % on the virtual clock); every step in saturation.csv
#               (phase ramp, down or refine), with the CPU time Apache took
#               in it (server_s) and the window it was read over (window_s)
#   server      the replies of every step kept up with over the CPU time
#               Apache took for them: the rate Apache would sustain with
#               a client that cost it nothing.
# Why each setting is what it is: NOTES.md, "Apache" and "The knee search".
# shellcheck source=workloads/lib/server.sh
. "$SWEEP_DIR/lib/server.sh"
# shellcheck source=workloads/lib/httperf.sh
. "$SWEEP_DIR/lib/httperf.sh"

WL_ABOUT="a private Apache httpd: reply time, then httperf's saturation search"
WL_LOOPS=0:8000:1000
WL_REPEATS=3
WL_POINT_SECONDS=190
WL_STAGE=guest
WL_REPEATS_VIRTUAL=2
WL_IN_ALL=1
WL_SERVER=1
WL_PACKAGES="apache2-bin httperf"
WL_BAND_POINT="5e-4 0"
wl_describe() { echo ", saturation steps of $STEP_SECONDS s, $(server_requests) replies a reference"; }
# A point gets cheaper as its delay grows (a spin emulates faster than
# Apache's own code): the cost lablib.sweep.parts.balance deals parts by.
WL_COST_SLOPE=-0.4
APACHE_PORT=${APACHE_PORT:-18080}
server_is Apache "$APACHE_PORT" httpd.pid httperf
HTTPERF_PORT=$APACHE_PORT
APACHE_BIN=${APACHE_BIN:-/usr/sbin/apache2}
APACHE_MODULES=${APACHE_MODULES:-/usr/lib/apache2/modules}
APACHE_REFINE=0.05
APACHE_REFINE_VIRTUAL=0.005
APACHE_KEEPUP=${APACHE_KEEPUP:-0.95}
APACHE_KEEPUP_VIRTUAL=${APACHE_KEEPUP_VIRTUAL:-0.995}
for v in APACHE_KEEPUP APACHE_KEEPUP_VIRTUAL; do
	[[ ${!v} =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]] ||
		bad_arg "$v wants a fraction in (0, 1], not '${!v}'"
done
# The MPM: prefork (APACHE_MPM=event for Apache's default).
APACHE_MPM=${APACHE_MPM:-prefork}
case $APACHE_MPM in
event | prefork) ;;
*) bad_arg "APACHE_MPM wants event or prefork, not '$APACHE_MPM'" ;;
esac

srv_check() {
	[ -x "$APACHE_BIN" ] || die "no Apache at $APACHE_BIN (install apache2-bin: 'make deps')"
	local m
	for m in "mpm_$APACHE_MPM" authz_core dir mime; do
		[ -f "$APACHE_MODULES/mod_$m.so" ] || die "Apache module mod_$m.so missing in $APACHE_MODULES"
	done
	if [ "$RUN_CLOCK" = virtual ]; then
		APACHE_REFINE=$APACHE_REFINE_VIRTUAL
		APACHE_KEEPUP=$APACHE_KEEPUP_VIRTUAL
	fi
	HTTPERF_REFINE=$APACHE_REFINE HTTPERF_KEEPUP=$APACHE_KEEPUP
	httperf_check
}

srv_settings() {
	printf '%s\n' "apache=$APACHE_BIN" "mpm=$APACHE_MPM"
	httperf_settings
}

srv_prepare() {
	httperf_docroot <"$SWEEP_DIR/apache/index.html"
	sed -e "s|@DIR@|$SRV_DIR|g" -e "s|@PORT@|$APACHE_PORT|g" \
		-e "s|@MODULES@|$APACHE_MODULES|g" -e "s|@MPM@|$APACHE_MPM|g" -e "s|@USER@|$HTTP_USER|g" \
		-e "s|@GROUP@|$HTTP_GROUP|g" \
		"$SWEEP_DIR/apache/httpd.conf.in" >"$SRV_DIR/httpd.conf"
	cp "$SRV_DIR/httpd.conf" "$LAB_DIR/httpd.conf"
}

srv_setup() {
	log "$("$APACHE_BIN" -v | sed -n 's/^Server version: //p')"
	httperf_setup
}

# Fresh, with an empty access log.
srv_start() {
	rm -f "$SRV_DIR/access.log"
	"$@" "$APACHE_BIN" -f "$SRV_DIR/httpd.conf" -k start
}

srv_foreground() { SRV_FG=("$APACHE_BIN" -f "$SRV_DIR/httpd.conf" -DFOREGROUND); }

srv_reference() { REFERENCE_ARGS=(127.0.0.1 "$APACHE_PORT" /index.html); }

srv_finish() {
	[ -z "$SRV_DIR" ] || [ ! -f "$SRV_DIR/error.log" ] ||
		cp "$SRV_DIR/error.log" "$LAB_DIR/logs/httpd-error.log" 2>/dev/null || true
}
