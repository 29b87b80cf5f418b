"""The Cognito user pool whose JWTs the ``$connect`` authorizer accepts, and the public app client."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from relay_infra.nag import Acknowledged, acknowledge


class RelayUserPool(Construct):
    """Admin-created users (no self sign-up), a strong password policy, optional TOTP MFA, and one app client
    without a secret (mobile and browser apps cannot keep one).

    Both clients sign in through Cognito's API (SRP, or USER_PASSWORD_AUTH for the smoke test), never through
    the hosted UI, so OAuth is off (``disable_o_auth``): CDK's default would allow the authorization-code and
    implicit grants with ``https://example.com`` as the only callback URL."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.pool = cognito.UserPool(
            self,
            "Pool",
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.ESSENTIALS,
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.pool,
            Acknowledged(
                "AwsSolutions-COG2",
                "MFA is offered (TOTP) but not forced: the users are talkers of a voice app; an operator can "
                "switch the pool to REQUIRED without code changes.",
            ),
            Acknowledged(
                "AwsSolutions-COG8",
                "The Plus feature plan (threat protection) is priced per monthly active user; Essentials is "
                "enough for admin-created users behind a per-user turn rate limit.",
            ),
            Acknowledged(
                "AwsSolutions-COG3",
                "Threat protection (advanced security) needs the Cognito Plus plan, priced per monthly active "
                "user; the pool admits only admin-created users and the gateway rate-limits turns per user.",
            ),
        )
        self.client = self.pool.add_client(
            "AppClient",
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_srp=True),
            id_token_validity=Duration.hours(1),
            access_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
            prevent_user_existence_errors=True,
            disable_o_auth=True,
        )
        self.smoke_test_client = self.pool.add_client(
            "SmokeTestClient",
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_password=True),
            id_token_validity=Duration.minutes(15),
            access_token_validity=Duration.minutes(15),
            refresh_token_validity=Duration.hours(1),
            prevent_user_existence_errors=True,
            disable_o_auth=True,
        )
        """Signs the smoke test's user in with USER_PASSWORD_AUTH (a Lambda cannot run SRP's browser flow);
        the app client keeps SRP only."""
        self.audiences = [self.client.user_pool_client_id, self.smoke_test_client.user_pool_client_id]
        self.issuer = self.pool.user_pool_provider_url
        """``https://cognito-idp.<region>.amazonaws.com/<pool id>``: the JWTs' ``iss``."""
