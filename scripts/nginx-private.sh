# Sourced by scripts that run a private nginx from a folder of their own (no root, nothing
# of the machine's nginx configuration): nginx_private_conf DIR HTTP-BODY writes
# DIR/nginx.conf — one worker, in the foreground, pid, error log and temporary files in
# DIR — with HTTP-BODY inside its `http { }`. Start it with
#   /usr/sbin/nginx -p DIR -c DIR/nginx.conf
nginx_private_conf() {
    local dir=$1 body=$2
    mkdir -p "$dir/logs"
    cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
$body
}
CONF
}
