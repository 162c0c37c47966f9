/*
 * tls.c - read and check the HTTPS certificate and key (see tls.h).
 *
 * Called once by main.c at `serve`. OpenSSL parses both PEM files and
 * checks that the key belongs to the certificate; libmicrohttpd (GnuTLS)
 * then serves them. Nothing here is kept after the daemon has started but
 * the PEM text, which http_stop() frees with tls_free().
 */
#include "tls.h"
#include "kj_file.h"

#include <errno.h>
#include <microhttpd.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tls_supported(void)
{
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

/* The whole of a small file as a NUL-terminated string (caller frees). */
static int read_pem(const char *what, const char *path, char **out, struct kj_err *err)
{
    struct kj_err ferr;
    size_t n = 0;
    int rc = kj_read_file(path, TLS_MAX_PEM_BYTES, out, &n, &ferr);
    if (rc == KJ_ENOMEM)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading %s", path);
    if (rc == KJ_EINVAL)
        return KJ_FAIL(err, KJ_EIO, "%s %s is not a regular file", what, path);
    if (rc == 0 && n == 0) {
        free(*out);
        *out = NULL;
        rc = KJ_ELIMIT;
    }
    if (rc == KJ_ELIMIT)
        return KJ_FAIL(err, KJ_EINVAL, "%s %s is empty or larger than %d bytes", what, path,
                       TLS_MAX_PEM_BYTES);
    if (rc != 0)
        return KJ_FAIL(err, KJ_EIO, "cannot read %s: %s", what, ferr.msg);
    return 0;
}

/* A key protected by a passphrase is refused, never prompted for. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* OpenSSL's reason for the last failure, for a message ("no start line"). */
static const char *ssl_reason(void)
{
    const char *r = ERR_reason_error_string(ERR_peek_last_error());
    return r != NULL ? r : "unknown";
}

/* Log the certificate's subject and validity; warn when outside it. */
static void log_cert(X509 *x, const char *path)
{
    char subject[256] = "?", until[64] = "?";
    BIO *b = BIO_new(BIO_s_mem());
    X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
    if (b != NULL && ASN1_TIME_print(b, X509_get0_notAfter(x)) > 0) {
        int n = BIO_read(b, until, (int)sizeof until - 1);
        until[n > 0 ? n : 0] = '\0';
    }
    BIO_free(b);
    if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
        kj_log(KJ_LOG_WARN, "tls", "the certificate in %s expired on %s; clients will refuse it",
               path, until);
    else if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
        kj_log(KJ_LOG_WARN, "tls", "the certificate in %s is not valid yet", path);
    kj_log(KJ_LOG_INFO, "tls", "certificate subject=\"%s\" not_after=\"%s\" file=%s", subject,
           until, path);
}

/* Parse both PEM texts and check that the key is the certificate's. */
static int check_pair(const struct tls_pem *p, const char *cert_path, const char *key_path,
                      struct kj_err *err)
{
    BIO *cb = BIO_new_mem_buf(p->cert, -1), *kb = BIO_new_mem_buf(p->key, -1);
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    int rc = 0;
    if (cb == NULL || kb == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory checking the TLS files");
        goto out;
    }
    if ((x = PEM_read_bio_X509(cb, NULL, no_passphrase, NULL)) == NULL) {
        rc = KJ_FAIL(err, KJ_EINVAL, "--tls-cert %s holds no PEM certificate "
                     "(\"-----BEGIN CERTIFICATE-----\"; openssl: %s)", cert_path, ssl_reason());
        goto out;
    }
    if ((k = PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL)) == NULL) {
        rc = KJ_FAIL(err, KJ_EINVAL, "--tls-key %s holds no unencrypted PEM private key "
                     "(openssl: %s; an encrypted key must be decrypted first: openssl pkey "
                     "-in KEY -out KEY2)", key_path, ssl_reason());
        goto out;
    }
    if (X509_check_private_key(x, k) != 1) {
        rc = KJ_FAIL(err, KJ_EINVAL, "the key in %s does not match the certificate in %s",
                     key_path, cert_path);
        goto out;
    }
    log_cert(x, cert_path);
out:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    return rc;
}

int tls_load(const char *cert_path, const char *key_path, struct tls_pem *out,
             struct kj_err *err)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (!tls_supported())
        return KJ_FAIL(err, KJ_EINVAL, "this libmicrohttpd was built without TLS; serve plain "
                       "HTTP behind a TLS proxy (deploy/nginx/) instead");
    if ((rc = read_pem("--tls-cert", cert_path, &out->cert, err)) != 0 ||
        (rc = read_pem("--tls-key", key_path, &out->key, err)) != 0 ||
        (rc = check_pair(out, cert_path, key_path, err)) != 0)
        tls_free(out);
    return rc;
}

void tls_free(struct tls_pem *out)
{
    if (out->key != NULL)
        OPENSSL_cleanse(out->key, strlen(out->key));
    free(out->key);
    free(out->cert);
    out->key = NULL;
    out->cert = NULL;
}
