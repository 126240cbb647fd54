#!/bin/bash
# gen-certs.sh DIR - certificates for the uplink TLS test, made fresh each run:
#   ca.pem            the CA the broker and the clients trust
#   wrongca.pem       an unrelated CA
#   server.pem        localhost / 127.0.0.1, signed by ca
#   wronghost.pem     valid, signed by ca, but for wrong.example only
#   expired.pem       localhost / 127.0.0.1, signed by ca, expired in 2020
#   client.pem        device certificate (CN=tram7), signed by ca
#   rogue.pem         device certificate signed by wrongca
# each with its .key.
set -euo pipefail
d=$1
mkdir -p "$d"
cd "$d"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

ca() {
	key "$1"
	openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "/CN=$2" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$1.pem"
}

# leaf NAME CA CN SAN EXT [startdate enddate]
leaf() {
	local name=$1 signer=$2 cn=$3 san=$4 eku=$5
	key "$name"
	openssl req -new -key "$name.key" -subj "/CN=$cn" -out "$name.csr"
	printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=%s\n' "$eku" > "$name.ext"
	[ -n "$san" ] && printf 'subjectAltName=%s\n' "$san" >> "$name.ext"
	if [ $# -ge 7 ]; then
		# openssl x509 cannot back-date; a throw-away `openssl ca` can.
		mkdir -p "ca-$name"
		: > "ca-$name/index.txt"
		cat > "ca-$name/ca.cnf" <<CNF
[ca]
default_ca = x
[x]
dir = ca-$name
database = \$dir/index.txt
new_certs_dir = \$dir
serial = \$dir/serial
default_md = sha256
policy = p
copy_extensions = none
[p]
commonName = supplied
CNF
		echo 01 > "ca-$name/serial"
		openssl ca -batch -config "ca-$name/ca.cnf" -cert "$signer.pem" -keyfile "$signer.key" \
			-startdate "$6" -enddate "$7" -extfile "$name.ext" -in "$name.csr" \
			-out "$name.pem" 2>/dev/null
	else
		openssl x509 -req -in "$name.csr" -CA "$signer.pem" -CAkey "$signer.key" \
			-CAcreateserial -days 365 -sha256 -extfile "$name.ext" -out "$name.pem" 2>/dev/null
	fi
}

ca ca "railmon test CA"
ca wrongca "someone else"
leaf server ca localhost "DNS:localhost,IP:127.0.0.1" serverAuth
leaf wronghost ca wrong.example "DNS:wrong.example" serverAuth
leaf expired ca localhost "DNS:localhost,IP:127.0.0.1" serverAuth 20200101000000Z 20200102000000Z
leaf client ca tram7 "" clientAuth
leaf rogue wrongca tram7 "" clientAuth
chmod 644 ./*.key
echo "certificates in $d"
