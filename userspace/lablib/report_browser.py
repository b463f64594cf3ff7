"""Headless Chromium for the results page (lablib.report) and its test
(tests/host/test_report.py): the page's DOM once its scripts ran, what its
check script found (images, links, rows as laid out, the filter, a plot's
larger view), and a picture of it."""
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

from lablib import cli

BROWSER_TIMEOUT = 120
CHECK_MARK = "LAB-CHECK"



def chromium():
    """The Chromium binary on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(args, page, fragment=""):
    """Run headless Chromium with @args on @page (#@fragment); its stdout."""
    binary = chromium()
    if not binary:
        raise cli.BadInput("no chromium on PATH (make deps installs it)")
    url = pathlib.Path(page).resolve().as_uri()
    if fragment:
        url += "#" + urllib.parse.quote(fragment)
    with tempfile.TemporaryDirectory(prefix="lab-chromium-") as profile:
        cmd = [binary, "--headless=new", "--disable-gpu", "--no-first-run",
               "--hide-scrollbars", "--disable-extensions", f"--user-data-dir={profile}"]
        if os.geteuid() == 0:
            cmd.append("--no-sandbox")
        try:
            out = subprocess.run([*cmd, *args, url], capture_output=True, text=True,
                                 timeout=BROWSER_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise cli.BadInput(f"chromium took more than {BROWSER_TIMEOUT} s on {url}") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise cli.BadInput(f"chromium exited with status {out.returncode} on {url}: {last}")
    return out.stdout


def dump_dom(page, fragment="", width=1280, height=900):
    """The DOM of @page (#@fragment) once it has loaded and its scripts
    ran, laid out in a @width x @height window."""
    return _browser(["--virtual-time-budget=10000", f"--window-size={width},{height}",
                     "--dump-dom"], page, fragment)


def check_page(page, fragment=""):
    """Load @page (written with check=True; #@fragment: the filter's
    experiment) in headless Chromium and say what its check script found,
    what a person sees: {"images": [{src, width (decoded), shown (laid
    out)}], "links": [{href, url}], "rows": [{name, hidden, text (as
    laid out)}], "options": [the filter's options' text], "shown": the
    count beside it, "view": {open, src, thumb, width, window} (the first
    plot shown, clicked: its larger view) or None, "broken_images": [src],
    "broken_links": [href]}; an image is broken when the browser decoded
    nothing (naturalWidth 0), a relative link when it leads to no file or
    folder on disk."""
    dom = dump_dom(page, fragment)
    m = re.search(f'<pre id="lab-check"[^>]*>{CHECK_MARK}(.*?){CHECK_MARK}-END</pre>', dom,
                  re.S)
    if not m:
        raise cli.BadInput(f"{page}: the browser check wrote no result (a page without "
                           "check=True, or its script failed)")
    found = json.loads(html.unescape(m.group(1)))
    found["broken_images"] = [i["src"] for i in found["images"] if not i["width"]]
    broken = []
    for link in found["links"]:
        if urllib.parse.urlsplit(link["href"]).scheme:
            continue
        target = urllib.parse.urlsplit(link["url"])
        if target.scheme != "file" or not os.path.exists(
                urllib.request.url2pathname(target.path)):
            if link["href"] not in broken:
                broken.append(link["href"])
    found["broken_links"] = broken
    return found


def screenshot(page, png, width=1280, height=900, fragment=""):
    """A picture of @page (#@fragment) as Chromium shows it in a @width x
    @height window."""
    png = pathlib.Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    _browser([f"--screenshot={png}", f"--window-size={width},{height}"], page, fragment)
    if not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise cli.BadInput(f"chromium made no PNG picture in {png}")
    return png
