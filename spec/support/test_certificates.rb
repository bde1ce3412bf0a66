# frozen_string_literal: true

require "fileutils"
require "openssl"
require "tmpdir"

# Certificates for a TLS redis-server of the specs' own, made on the spot:
# a CA, a server certificate it signed for 127.0.0.1 and localhost, and a
# second CA that signed nothing. Written as PEM files into #dir.
class TestCertificates
  attr_reader :dir

  def initialize
    @dir = Dir.mktmpdir("lf_tls")
    ca_cert, ca_key = self.class.ca("sidekiq-limit_fetch test CA")
    server_cert, server_key = self.class.server(ca_cert, ca_key)
    write("ca.crt", ca_cert.to_pem)
    write("server.crt", server_cert.to_pem)
    write("server.key", server_key.private_to_pem)
    write("other_ca.crt", self.class.ca("another CA").first.to_pem)
  end

  def path(name)
    File.join(dir, name)
  end

  # redis-server arguments for a TLS port with these certificates.
  def redis_args(tls_port)
    [
      "--tls-port", tls_port.to_s, "--tls-cert-file", path("server.crt"), "--tls-key-file", path("server.key"),
      "--tls-ca-cert-file", path("ca.crt"), "--tls-auth-clients", "no"
    ]
  end

  def remove
    FileUtils.rm_rf(dir)
  end

  def self.ca(name)
    key = OpenSSL::PKey::EC.generate("prime256v1")
    cert = new_certificate(OpenSSL::X509::Name.parse("/CN=#{name}"), key)
    cert.issuer = cert.subject
    extensions = OpenSSL::X509::ExtensionFactory.new(cert, cert)
    cert.add_extension(extensions.create_extension("basicConstraints", "CA:TRUE", true))
    cert.add_extension(extensions.create_extension("keyUsage", "keyCertSign,cRLSign", true))
    cert.add_extension(extensions.create_extension("subjectKeyIdentifier", "hash", false))
    cert.sign(key, "SHA256")
    [cert, key]
  end

  def self.server(ca_cert, ca_key)
    key = OpenSSL::PKey::EC.generate("prime256v1")
    cert = new_certificate(OpenSSL::X509::Name.parse("/CN=127.0.0.1"), key)
    cert.issuer = ca_cert.subject
    extensions = OpenSSL::X509::ExtensionFactory.new(ca_cert, cert)
    cert.add_extension(extensions.create_extension("basicConstraints", "CA:FALSE", true))
    cert.add_extension(extensions.create_extension("keyUsage", "digitalSignature", true))
    cert.add_extension(extensions.create_extension("extendedKeyUsage", "serverAuth", false))
    cert.add_extension(extensions.create_extension("subjectAltName", "IP:127.0.0.1,DNS:localhost", false))
    cert.add_extension(extensions.create_extension("authorityKeyIdentifier", "keyid", false))
    cert.sign(ca_key, "SHA256")
    [cert, key]
  end

  def self.new_certificate(subject, key)
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = OpenSSL::BN.rand(64)
    cert.subject = subject
    cert.public_key = key
    cert.not_before = Time.now - 60
    cert.not_after = Time.now + 3600
    cert
  end

  private

  def write(name, pem)
    File.write(path(name), pem)
  end
end
