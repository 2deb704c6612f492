/* SPDX-License-Identifier: MIT */
/*
 * trustcert FILE.pem: adds the certificate to the local machine's trusted
 * roots (the store WinHTTP verifies against), so that tests/windows/run.sh
 * can serve HTTPS with a certificate of its own and test the real trust path.
 * For a throwaway WINEPREFIX or a CI machine only.
 */
#include <stdio.h>
#include <stdlib.h>

#include <windows.h>
#include <wincrypt.h>

int main(int argc, char **argv)
{
	static char pem[65536];
	BYTE der[16384];
	DWORD n = sizeof(der);
	HCERTSTORE store;
	size_t len;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: trustcert FILE.pem\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		fprintf(stderr, "trustcert: cannot open %s\n", argv[1]);
		return 1;
	}
	len = fread(pem, 1, sizeof(pem) - 1, f);
	fclose(f);
	pem[len] = '\0';
	if (!CryptStringToBinaryA(pem, 0, CRYPT_STRING_BASE64HEADER, der, &n, NULL, NULL)) {
		fprintf(stderr, "trustcert: %s is not a PEM certificate (error %lu)\n", argv[1],
			GetLastError());
		return 1;
	}
	store = CertOpenStore(CERT_STORE_PROV_SYSTEM_W, 0, 0, CERT_SYSTEM_STORE_LOCAL_MACHINE,
			      L"ROOT");
	if (!store || !CertAddEncodedCertificateToStore(store, X509_ASN_ENCODING, der, n,
							 CERT_STORE_ADD_REPLACE_EXISTING, NULL)) {
		fprintf(stderr, "trustcert: cannot add %s to the trusted roots (error %lu)\n",
			argv[1], GetLastError());
		return 1;
	}
	CertCloseStore(store, 0);
	return 0;
}
